package store

import (
	"math/bits"

	"github.com/pi-history/pi-history/trigram"
)

// MayHold narrows ranges (ascending, disjoint) to the seqs whose text may
// hold the needle of probe p: those whose trigram sketch passes it, and
// those stored before sketches were kept. Seqs with neither text nor
// sketch drop out. The result is ascending, with adjacent seqs joined into
// one range; skipped counts the sketched entries ruled out. Where the
// sketches pass nearly every entry, only a sample of them is read (see
// sketchOdds), so the result may also hold entries whose sketch fails:
// never one fewer than the sketches pass.
//
// Over long stretches, entries are tested 64 at a time on the chunk's
// bit-sliced rows first; only those that pass are tested on their own
// sketch, and not even that when the row was the whole sketch.
//
// A chunk with a filter of its texts' bytes (see WarmFilters) is first
// tested on it, and its entries are skipped at once when it lacks the
// needle's. A probe without trigrams (a needle of one or two characters)
// is tested on the filters alone: every entry with a sketch in a chunk
// that passes is kept.
//
// Ranges spanning holdSplitMin seqs or more are tested in two halves at
// once, the upper half on another goroutine.
func (s *Store) MayHold(ranges []SeqRange, p *trigram.Probe) (out []SeqRange, skipped int, err error) {
	if !wellFormed(ranges) || Count(ranges) < holdSplitMin {
		return s.mayHold(ranges, p)
	}
	lower, upper := Split(ranges)
	var (
		uout  []SeqRange
		uskip int
		uerr  error
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		uout, uskip, uerr = s.mayHold(upper, p)
	}()
	out, skipped, err = s.mayHold(lower, p)
	<-done
	if err == nil {
		err = uerr
	}
	if err != nil {
		return nil, 0, err
	}
	if n := len(out); n > 0 && len(uout) > 0 && out[n-1].Hi+1 == uout[0].Lo {
		out[n-1].Hi = uout[0].Hi
		uout = uout[1:]
	}
	return append(out, uout...), skipped + uskip, nil
}

// holdSplitMin is the fewest seqs MayHold tests on two goroutines. A
// search for a needle made of common trigrams tests the sketches of the
// whole history a growing window at a time (a first page that tested a
// million sketches and read 124 texts took 25 ms); windows of this size
// and more are split.
var holdSplitMin uint64 = 64 * sketchChunk

// wellFormed reports whether every range has Lo <= Hi.
func wellFormed(ranges []SeqRange) bool {
	for _, r := range ranges {
		if r.Lo > r.Hi {
			return false
		}
	}
	return true
}

// filterVerdict is what a chunk's filter said of a probe.
type filterVerdict uint8

const (
	untested filterVerdict = iota // no filter, or not worth testing
	mayPass
	ruledOut
)

// mayHold is MayHold on this goroutine alone.
//
// One piece (185 lines) on purpose: it is the inner loop of every
// search, and what one range leaves to the next (the filter tested last
// and its answer, the chunk met last, the chunkRuns and run index of the
// group met last with what they passed, the sketches' pass odds) lives in
// its locals. Split into functions, that state would move into a struct
// reached through a pointer on each chunk. Its first inner loop, the
// cached chunks' filter verdicts, is kept apart from the second on purpose
// (see the comment on it).
func (s *Store) mayHold(ranges []SeqRange, p *trigram.Probe) (out []SeqRange, skipped int, err error) {
	add := func(lo, hi uint64) {
		if n := len(out); n > 0 && out[n-1].Hi+1 == lo {
			out[n-1].Hi = hi
			return
		}
		out = append(out, SeqRange{Lo: lo, Hi: hi})
	}
	pos, pos2, pos4 := p.SlicePositions(), p.WidePositions(), p.WideFourPositions()
	ordered := len(pos) <= 2
	var held []chunkRef
	var verdicts []filterVerdict
	// tested is the last filter tested, passed its answer: the ranges of
	// candidate blocks meet one chunk many times.
	var tested *textFilter
	passed := true
	// seen is the last chunk met: the ranges of candidate blocks meet a
	// chunk many times, and it is asked for a filter once.
	var seen *chunkSketches
	from := s.sketchFrom.Load()
	var odds sketchOdds // how often the entries' own sketches have passed
	// The run index of the group met last, and the slices of it its
	// runs passed (see runIndex): the chunks of a range, and the
	// ranges, come in order.
	var runBuf [trigram.RunsMax]uint32
	runs := runBuf[:0]
	if useRunIndex {
		for _, b := range p.Runs() {
			runs = append(runs, b>>runShift)
		}
	}
	group, index, indexPass := ^uint64(0), (*runIndex)(nil), uint64(0)
	coarse, coarseIndex, coarsePass := ^uint64(0), (*chunkRuns)(nil), uint64(0)
	var lives []uint16 // the words of each chunk of a range its index leaves to test
	for k, r := range ranges {
		if r.Lo > r.Hi {
			continue
		}
		// alone says no other range meets the chunks r meets: its
		// stretch is tested on its own sketches, not the columns, whose
		// words no other stretch would read (see chunkSketches.test).
		alone := (k == 0 || ranges[k-1].Hi/sketchChunk != r.Lo/sketchChunk) &&
			(k == len(ranges)-1 || ranges[k+1].Lo/sketchChunk != r.Hi/sketchChunk)
		if r.Lo < from {
			hi := min(r.Hi, from-1)
			add(r.Lo, hi)
			if hi == r.Hi {
				continue
			}
			r.Lo = hi + 1
		}
		first := r.Lo / sketchChunk
		cached := s.sketches.getRange(first, r.Hi/sketchChunk, held[:0])
		held = cached
		// The filters of the range's cached chunks are tested first, in
		// a loop of their own. Each test is a cache miss or more (the
		// filter's sets span 200 KB); with nothing else between them
		// the processor has several in flight at once, where the work on
		// each chunk kept them one after another.
		verdicts, lives = verdicts[:0], lives[:0]
		for k := range cached {
			ref, v := &cached[k], untested
			c := first + uint64(k)
			base := c * sketchChunk
			if f := ref.filter; f != nil && len(runs) > 0 && max(r.Lo, base)-base < uint64(ref.n) {
				// A long needle: the chunk's group's chunkRuns judges
				// it, then its group's run index its slices, each
				// while it was built for the chunk's filter.
				if g := c / chunkRunsGroup; g != coarse {
					coarse, coarseIndex = g, s.sketches.chunkRunsOf(g)
					if coarseIndex != nil {
						coarsePass = coarseIndex.pass(p.Runs())
					}
				}
				judged := coarseIndex != nil && coarseIndex.from[c%chunkRunsGroup] == f
				if judged && coarsePass&(1<<(c%chunkRunsGroup)) == 0 {
					verdicts, lives = append(verdicts, ruledOut), append(lives, ^uint16(0))
					continue
				}
				if g := c / runChunks; g != group {
					group, index = g, s.sketches.runIndexOf(g)
					if index != nil {
						indexPass = index.pass(runs)
					}
				}
				if index != nil && index.from[c%runChunks] == f {
					live := index.live(indexPass, c%runChunks)
					v = ruledOut
					if live != 0 {
						v = mayPass
					}
					verdicts, lives = append(verdicts, v), append(lives, live)
					continue
				}
				if judged {
					verdicts, lives = append(verdicts, mayPass), append(lives, ^uint16(0))
					continue
				}
			}
			lives = append(lives, ^uint16(0))
			if f := ref.filter; f != nil && max(r.Lo, base)-base < uint64(ref.n) && (f == tested || p.FilterWorthIt()) {
				if f != tested {
					tested, passed = f, p.PassFilter(&f.bits)
				}
				v = ruledOut
				if passed {
					v = mayPass
				}
			}
			verdicts = append(verdicts, v)
		}
		for c := first; c <= r.Hi/sketchChunk; c++ {
			base := c * sketchChunk
			lo, hi := max(r.Lo, base)-base, min(r.Hi-base, sketchChunk-1)
			ref, v, live := cached[c-first], verdicts[c-first], lives[c-first]
			cachedRef := ref.ch != nil // release has nothing to do for it
			if ref.ch == nil {
				ch, err := s.chunkToTest(c)
				if err != nil {
					return nil, 0, err
				}
				ref = refOf(ch) // loaded for this test, or cached meanwhile
			}
			ch, sf, sn := ref.ch, ref.filter, uint64(ref.n)
			if ch != seen && (sf == nil || sn < uint64(ref.known)) {
				seen = ch
				if ch.once {
					seen = nil // recycled: another chunk may come back in it
				} else if (c+1)*sketchChunk <= s.LastSeq()+1 {
					// A full chunk loaded, or filled, since the warm-up.
					s.builds.ask(c, ch)
				}
			}
			if f := sf; v == untested && f != nil && lo < sn && (f == tested || p.FilterWorthIt()) {
				// A chunk loaded for this test (or cached since the
				// range's were looked up) that has a filter.
				if f != tested {
					tested, passed = f, p.PassFilter(&f.bits)
				}
				if v = mayPass; !passed {
					v = ruledOut
				}
			}
			if v == ruledOut {
				// The chunk's filter rules out its first sn entries at
				// once: it lacks one of the needle's byte trigrams (or
				// its pair or byte; for a long needle, one of its runs).
				end := min(hi, sn-1)
				if lo == 0 && end == sn-1 {
					skipped += int(ref.ruled)
				} else {
					skipped += ch.sketched(lo, end)
				}
				if end == hi {
					if !cachedRef {
						ch.release()
					}
					continue
				}
				lo = end + 1
			}
			if p.Empty() {
				// No trigram for the sketches (a needle of one or two
				// characters, tested on the filters alone): every entry
				// with a sketch (every searchable entry) may hold it.
				ch.eachSketched(lo, hi, func(i uint64) { add(base+i, base+i) })
				ch.release()
				continue
			}
			if hi-lo+1 >= sliceMin && !ordered && !ch.once {
				// Once per search: the trigrams fewest entries of the
				// first chunk tested at length have are tested first,
				// by columns and sketches. Worked out once per call, as
				// before, it cost an exact count of 20 characters ~300 µs
				// of CPU (13%): a count calls MayHold for each of its
				// windows, each half of one on its own.
				p, pos, pos2 = orderedProbe(ch, p)
				ordered = true
			}
			skipped += ch.test(p, pos, pos2, pos4, lo, hi, live, alone, &odds, func(i uint64) { add(base+i, base+i) })
			ch.release()
		}
	}
	return out, skipped, nil
}

// test calls pass with each entry i in [lo, hi] (indices in the chunk)
// whose sketch passes p, and returns how many sketched entries it ruled
// out. pos are p's row positions, pos2 and pos4 its wide-row positions
// (trigrams, 4-grams). Stretches of sliceMin entries or more, and any
// stretch once the columns are built, are tested on the columns first,
// except in a chunk loaded for one test (once), whose columns would cost
// more than they save; in a long stretch, the entries
// with a wide row are tested on the wide rows' columns (widePass) instead,
// before any of their sketches is read. (A candidate block's few entries
// would not repay the wide columns' cost.) Their narrow rows, folded from
// 4,096 bits or more, have nearly every bit set and ruled out almost
// nothing, but kept a word's columns from running dry: with them, the
// columns of ~23 of a 26-position needle's positions were read for each
// 64 entries; without them, ~5.5 (all-common needles of 13+ characters
// scanned 42% faster). A stretch of up to aloneMax entries that is alone
// in its chunk (no other range of the call meets it: the scattered
// candidates of first occurrences) is tested on its sketches even when
// the chunk has columns, whose words, a line each, nothing else would
// read. Once the entries' own sketches pass nearly every entry the columns
// pass on to them (see sketchOdds), test tests only a sample of them and
// passes the others on unread.
func (c *chunkSketches) test(p *trigram.Probe, pos, pos2, pos4 []uint16, lo, hi uint64, live uint16, alone bool, odds *sketchOdds, pass func(i uint64)) (skipped int) {
	if c.once || hi-lo+1 < sliceMin && (!c.sliced.Load() || alone && hi-lo+1 <= aloneMax) {
		for i := lo; i <= hi; i++ {
			if a, b := c.off[i], c.off[i+1]; a < b {
				if live&(1<<(i/64)) != 0 && c.pass(p, i, a, b, false) {
					pass(i)
				} else {
					skipped++
				}
			}
		}
		return skipped
	}
	cols := c.columns()
	var widePass, wide [sketchChunk / 64]uint64
	if hi-lo+1 >= sliceMin && len(c.wideMask) > 0 {
		widePass, wide = c.widePass(pos2, pos4, lo, hi, live), c.wideAt
	}
	// First, for every word, the entries with a sketch (ms) and those of
	// them the columns pass on to their own sketch test (accs). The lines
	// those tests read first are asked for as they are found, before any
	// is tested: each is a cache miss of its own, mostly to memory on a
	// machine whose last-level cache is small beside the history (32 MB
	// here), and the test waited on each in turn.
	var ms, accs [sketchChunk / 64]uint64
	ask := !odds.skim() // decided once for the lines asked for; the tests decide word by word
	for w := lo / 64; w <= hi/64; w++ {
		first, last := max(lo, w*64), min(hi, w*64+63)
		m := ^uint64(0) >> (63 - (last - first)) << (first % 64) & c.has[w]
		if live&(1<<w) == 0 {
			// The run index rules the word out (see runIndex).
			skipped += bits.OnesCount64(m)
			continue
		}
		acc := m &^ wide[w]
		for _, q := range pos {
			if acc == 0 {
				break
			}
			acc &= cols.word(q, int(w))
		}
		acc |= m & (c.open[w] | widePass[w])
		ms[w], accs[w] = m, acc
		if !ask {
			continue // a sample of them is tested: not worth asking for
		}
		for v := acc; v != 0; v &= v - 1 {
			i := w*64 + uint64(bits.TrailingZeros64(v))
			if a, b := c.off[i], c.off[i+1]; a < b {
				prefetch(&c.data[a+uint32(p.FirstRead(int(b-a), c.shape[i]))])
			}
		}
	}
	for w := lo / 64; w <= hi/64; w++ {
		n := 0
		skim, weight := odds.skim(), 1 // weight: the entries a test stands for
		if skim {
			weight = skimEvery
		}
		for v := accs[w]; v != 0; v &= v - 1 {
			i := w*64 + uint64(bits.TrailingZeros64(v))
			if skim && !odds.sample() {
				pass(i)
				n++
				continue
			}
			a, b := c.off[i], c.off[i+1]
			ok := c.pass(p, i, a, b, true)
			if odds.count(ok, weight); ok {
				pass(i)
				n++
			}
		}
		skipped += bits.OnesCount64(ms[w]) - n
	}
	return skipped
}

// sketchOdds counts, over one MayHold call (on one goroutine), how many of
// the entries the columns passed on to their own sketch that sketch
// passed, so that test can stop reading sketches that rule out almost
// nothing. For a needle found in a fifth of the history (a line of the
// license header that heads every Go source file, read by thousands of
// tool calls), the columns passed 213,919 of 990,874 entries and their
// sketches 212,041 of those: each such test reads up to one line of the
// sketch for each of the needle's grams, 42% of the time of the count,
// and the text read after it holds the needle within its first lines.
//
// Once skimAfter tests have been counted and skimShare of them passed,
// only one entry in skimEvery is tested, and counts for the skimEvery
// entries it stands for: the others go on to have their texts read. The
// counts are halved every skimWindow entries, so that where the sketches
// start to rule entries out again (a later stretch of history), a few
// samples that fail turn the tests back on.
type sketchOdds struct {
	tested, passed int
	seen           int // entries met while skimming, for sample
}

const (
	skimAfter  = 1024
	skimShare  = 0.9
	skimEvery  = 16
	skimWindow = 2048
)

// skim reports whether sketches are to be sampled, not each tested.
func (o *sketchOdds) skim() bool {
	return o.tested >= skimAfter && float64(o.passed) >= skimShare*float64(o.tested)
}

// sample reports whether the entry met next while skimming is tested.
func (o *sketchOdds) sample() bool {
	o.seen++
	return o.seen%skimEvery == 0
}

// count records a test's answer, standing for n entries.
func (o *sketchOdds) count(pass bool, n int) {
	o.tested += n
	if pass {
		o.passed += n
	}
	if o.tested >= skimWindow {
		o.tested, o.passed = o.tested/2, o.passed/2
	}
}

// aloneMax is the longest stretch test takes to the sketches directly
// when no other stretch of the same call meets its chunk.
const aloneMax = 8

// pass tests entry i's sketch, data[a:b], on p. The chunk's marks already
// say each sketch's format, so its last bytes are not read. rowed says the
// entry's row has passed p's row positions: a row is the whole of a
// format-2 sketch no larger than it and, of a format-3 or -4 sketch whose
// trigram set is no larger, that set, so only the 4-grams are left.
func (c *chunkSketches) pass(p *trigram.Probe, i uint64, a, b uint32, rowed bool) bool {
	bit := uint64(1) << (i % 64)
	switch {
	case c.shape[i] != 0:
		sh := c.shape[i]
		return p.PassShaped(c.data[a:b], sh, !rowed || trigram.ShapeTriBytes(sh) > trigram.SliceBits/8)
	case c.open[i/64]&bit != 0:
		return p.Pass(c.data[a:b])
	case rowed && int(b-a)-1 <= trigram.SliceBits/8:
		return true
	}
	return p.PassBits(c.data[a : b-1])
}
