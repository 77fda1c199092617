package index

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// listsOf returns lists holding m, added an entry at a time in offset
// order as the index adds them.
func listsOf(m map[uint32][]uint16) *postingLists {
	byOff := map[uint16][]uint32{}
	for k, offs := range m {
		for _, o := range offs {
			byOff[o] = append(byOff[o], k)
		}
	}
	offs := make([]uint16, 0, len(byOff))
	for o := range byOff {
		offs = append(offs, o)
	}
	slices.Sort(offs)
	l := newPostingLists(0)
	for _, o := range offs {
		l.add(byOff[o], o)
	}
	return l
}

// TestPostingListsAnswerAsAMapOfListsDoes: lists filled an entry at a
// time, read by key between additions (so that sorted pairs and a new
// tail merge) and at the end, give for every key, present or not, the
// offsets a map of lists built alongside holds, and list every key in
// order once; keys span the trigram, pair and last-byte ranges.
func TestPostingListsAnswerAsAMapOfListsDoes(t *testing.T) {
	for _, tc := range []struct {
		name          string
		entries, keys int
		readEvery     int // 0: read only at the end
	}{
		{"empty", 0, 0, 0},
		{"one entry", 1, 5, 0},
		{"a run read only at the end", 4096, 300, 0},
		{"a run read now and then", 4096, 300, 97},
		{"a run read after every entry", 300, 50, 1},
		{"a run read every few entries, its newer part merged into the older now and then", 2000, 120, 3},
		{"the largest offsets", 65536, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.entries)))
			l := newPostingLists(0)
			want := map[uint32][]uint16{}
			pick := func() uint32 {
				switch rng.IntN(4) {
				case 0:
					return pairKey | rng.Uint32N(1<<16)
				case 1:
					return lastKey | rng.Uint32N(256)
				}
				return rng.Uint32N(1 << 24)
			}
			pool := make([]uint32, tc.keys)
			for i := range pool {
				pool[i] = pick()
			}
			check := func() {
				t.Helper()
				for k, offs := range want {
					if got := l.get(k, nil); !slices.Equal(got, offs) {
						t.Fatalf("key %#x: %v, want %v", k, got, offs)
					}
				}
				for range 50 {
					if k := pick(); want[k] == nil && l.has(k) {
						t.Fatalf("absent key %#x is there", k)
					}
				}
				var keys []uint32
				l.each(func(k uint32, offs []uint16) error {
					if !slices.Equal(offs, want[k]) {
						t.Fatalf("each: key %#x: %v, want %v", k, offs, want[k])
					}
					keys = append(keys, k)
					return nil
				})
				if len(keys) != len(want) || !slices.IsSorted(keys) {
					t.Fatalf("each gave %d keys (sorted %v); want %d", len(keys), slices.IsSorted(keys), len(want))
				}
			}
			for e := range tc.entries {
				off := uint16(e)
				var ks []uint32
				for _, k := range pool {
					if rng.IntN(3) == 0 && !slices.Contains(ks, k) {
						ks = append(ks, k)
						want[k] = append(want[k], off)
					}
				}
				l.add(ks, off)
				if tc.readEvery > 0 && e%tc.readEvery == 0 {
					check()
				}
			}
			check()
		})
	}
}

// TestPostingListsReadBySeveralReadersAtOnce: readers that find the
// pairs out of order at the same time sort them once and all read the
// same answer (run with -race): with everything out of order, with a few
// entries added to ordered pairs (merged into the newer part), and with
// enough added that the newer part is merged into the older.
func TestPostingListsReadBySeveralReadersAtOnce(t *testing.T) {
	l := newPostingLists(0)
	next := uint16(0)
	addUpTo := func(n uint16) {
		for ; next < n; next++ {
			l.add([]uint32{uint32(next % 7), 1 << 20}, next)
		}
	}
	for _, step := range []struct {
		upTo uint16
		base int64 // where the older part ends: two pairs an entry
	}{{2000, 4000}, {2010, 4000}, {2100, 4000}, {2400, 4800}} {
		upTo := step.upTo
		addUpTo(upTo)
		var wg sync.WaitGroup
		for r := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := uint32(r % 7)
				got := l.get(k, nil)
				want := (int(upTo) - int(k) + 6) / 7
				if len(got) != want || got[0] != uint16(k) || !slices.IsSorted(got) || len(l.get(1<<20, nil)) != int(upTo) {
					t.Errorf("after %d entries, reader %d: key %d gave %d offsets from %v; want %d", upTo, r, k, len(got), got[:min(len(got), 1)], want)
				}
			}()
		}
		wg.Wait()
		if b := l.base.Load(); b != step.base || l.sorted.Load() != 2*int64(upTo) {
			t.Errorf("after %d entries the older part ends at pair %d and the newer at %d; want %d and %d", upTo, b, l.sorted.Load(), step.base, 2*int(upTo))
		}
	}
}

// BenchmarkOpenRunReadAfterEachAppend is a server's open run between
// appends: a run of 3,000 entries of 200 trigrams each, then per
// iteration one more entry and a read by key, which puts it in order.
// (go test -run X -bench OpenRun -benchmem ./index/)
func BenchmarkOpenRunReadAfterEachAppend(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := newPostingLists(0)
	keys := make([]uint32, 200)
	entry := func(off uint16) {
		for i := range keys {
			keys[i] = rng.Uint32N(1 << 24)
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		l.add(keys, off)
		keys = keys[:cap(keys)]
	}
	for off := range uint16(3000) {
		entry(off)
	}
	l.get(0, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%1000 == 999 {
			b.StopTimer() // a run ends; the next starts from 3,000 entries
			l = newPostingLists(0)
			for off := range uint16(3000) {
				entry(off)
			}
			l.get(0, nil)
			b.StartTimer()
		}
		entry(uint16(3000 + i%1000))
		l.get(keys[0], nil)
	}
	reportMemory(b)
}
