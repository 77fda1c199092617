// Command postings is a design study for issue 46, not part of the
// product: it builds byte-trigram postings over blocks of consecutive
// entries from an imported store, writes them to one file laid out for
// reading in place (a sorted directory, then each trigram's blocks as a
// bitmap or a delta list), maps that file, and answers first pages and
// exact counts from it, confirming candidates against the store's texts.
// It prints the file's size beside the JSONL's, the build's rate, each
// group's p50/p99 with texts read per query, ripgrep over the same JSONL,
// and the process's heap and resident memory, so that a layout on disk can
// be judged against the engine's goals before it is built into one.
//
//	go run ./bench/postings -data DIR -corpus JSONL_DIR [-block 64]
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
	"github.com/pi-history/pi-history/store"
)

func main() {
	data := flag.String("data", "", "an imported data directory (no server may own it)")
	corpus := flag.String("corpus", "", "the corpus's JSONL directory, for ripgrep and the size ratio")
	block := flag.Int("block", 64, "entries per block")
	n := flag.Int("n", 200, "needles per group")
	rgN := flag.Int("rg", 20, "needles per group also run through ripgrep")
	out := flag.String("out", "", "the postings file (default: DATA/postings-study.bin)")
	cacheMB := flag.Int("cache-mb", 64, "the store's block cache")
	flag.IntVar(&gramLen, "gram", 3, "bytes per gram: 3 (byte trigrams, exact keys) or 4 (4-grams hashed into 24 bits); needles shorter than a gram are not answered")
	flag.Parse()
	if *data == "" {
		fmt.Fprintln(os.Stderr, "usage: postings -data DIR -corpus JSONL_DIR")
		os.Exit(2)
	}
	if *out == "" {
		*out = filepath.Join(*data, "postings-study.bin")
	}
	if err := run(*data, *corpus, *out, uint64(*block), *n, *rgN, int64(*cacheMB)<<20); err != nil {
		fmt.Fprintln(os.Stderr, "postings:", err)
		os.Exit(1)
	}
}

func run(data, corpus, out string, block uint64, n, rgN int, cache int64) error {
	st, err := store.OpenWith(filepath.Join(data, "store"), store.Options{ReadOnly: true, CacheBytes: cache, SketchCacheBytes: 1})
	if err != nil {
		return err
	}
	defer st.Close()
	last := st.LastSeq()
	t0 := time.Now()
	stats, err := build(st, last, block, out)
	if err != nil {
		return err
	}
	took := time.Since(t0)
	jsonl := dirBytes(corpus)
	fmt.Printf("built %s: %d entries, %d blocks of %d, %d trigrams, %d postings (%d as bitmaps); %.1f MB of text in %.1f s (%.1f MB/s); file %.1f MB = %.3fx the JSONL (%.0f MB)\n",
		out, last, stats.blocks, block, stats.trigrams, stats.postings, stats.bitmaps, float64(stats.textBytes)/1e6, took.Seconds(),
		float64(stats.textBytes)/1e6/took.Seconds(), float64(stats.fileBytes)/1e6, float64(stats.fileBytes)/float64(max(jsonl, 1)), float64(jsonl)/1e6)
	runtime.GC()
	ix, err := openPostings(out)
	if err != nil {
		return err
	}
	defer ix.close()
	printMemory("after opening (no searches yet)")

	sm := &benchkit.Sampler{Last: last, R: rand.New(rand.NewPCG(1, 2)), Text: func(seq uint64) (string, error) {
		var s string
		_, err := st.TextBytes(seq, func(b []byte) { s = string(b) })
		return s, err
	}}
	groups := []struct {
		name     string
		min, max int
		count    bool
	}{
		{"first page, 4-5 characters", 4, 5, false},
		{"first page, 6-12 characters", 6, 12, false},
		{"first page, 13-40 characters", 13, 40, false},
		{"first page, near-misses of 6-20", 6, 20, false},
		{"exact count, 20 characters", 20, 20, true},
	}
	for _, g := range groups {
		var needles []string
		for len(needles) < n {
			s := sm.Sample(g.min, g.max)
			if s == "" {
				break
			}
			if g.name == "first page, near-misses of 6-20" {
				s = sm.NearMiss(s)
			}
			needles = append(needles, s)
		}
		var times, reads, hits []float64
		for _, nd := range needles {
			t := time.Now()
			limit := 50
			if g.count {
				limit = 0
			}
			h, r, err := ix.search(st, []byte(nd), limit)
			if err != nil {
				return err
			}
			times = append(times, float64(time.Since(t).Microseconds())/1000)
			reads = append(reads, float64(r))
			hits = append(hits, float64(h))
		}
		rgAt := benchkit.Spread(len(needles), rgN)
		var ratio string
		if rg := benchkit.RgTimes(corpus, benchkit.Choose(needles, rgAt), 0); rg != nil {
			ratio = fmt.Sprintf("; rg -F -c p50 %.1f ms, median ratio %.0fx", benchkit.Pct(rg, 0.5), benchkit.Pct(benchkit.Ratios(benchkit.Choose(times, rgAt), rg), 0.5))
		}
		fmt.Printf("%-36s p50 %8.3f ms  p99 %8.3f ms  texts read p50 %6.0f p99 %7.0f  hits p50 %5.0f%s\n", g.name,
			benchkit.Pct(times, 0.5), benchkit.Pct(times, 0.99), benchkit.Pct(reads, 0.5), benchkit.Pct(reads, 0.99), benchkit.Pct(hits, 0.5), ratio)
	}
	printMemory("after the searches")
	return nil
}

// gramLen is the bytes per gram (-gram).
var gramLen = 3

// gramKey is the 24-bit key of the gram at the start of b: a byte trigram
// itself, or a 4-gram hashed (different 4-grams may share a key: a search
// then reads more texts, never misses one).
func gramKey(b []byte) uint32 {
	if gramLen == 3 {
		return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
	}
	x := binary.LittleEndian.Uint32(b)
	return (x * 0x9E3779B1) >> 8
}

func printMemory(when string) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m, _ := benchkit.ReadMemory(os.Getpid())
	fmt.Printf("memory %s: Go heap in use %s MB; RSS %s MB (anonymous %s, file-backed %s)\n", when,
		benchkit.MB(int64(ms.HeapInuse)), benchkit.MB(m.RSS), benchkit.MB(m.Anon), benchkit.MB(m.File))
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

type buildStats struct {
	blocks, trigrams, postings, bitmaps int
	textBytes, fileBytes                int64
}

// build reads every text and writes the postings file. Postings are kept
// per trigram as growing lists of block numbers while reading (the study
// holds them in memory; a product would write segments as blocks fill),
// then written as containers of 65,536 blocks each, as roaring bitmaps
// lay them out: a bitmap of 8 KB when a container holds 4,096 blocks or
// more, else the blocks' low 16 bits as a delta list of uvarints.
func build(st *store.Store, last, block uint64, out string) (buildStats, error) {
	var bs buildStats
	lists := map[uint32][]uint32{}
	seen := make([]uint64, 1<<24/64)
	var touched []uint32
	cur := uint64(0)
	flush := func() {
		for _, k := range touched {
			lists[k] = append(lists[k], uint32(cur))
			seen[k/64] &^= 1 << (k % 64)
		}
		touched = touched[:0]
	}
	err := st.ScanTexts(1, last, false, func(seq uint64, text []byte) bool {
		if b := (seq - 1) / block; b != cur {
			flush()
			cur = b
		}
		bs.textBytes += int64(len(text))
		for i := 0; i+gramLen <= len(text); i++ {
			k := gramKey(text[i:])
			if seen[k/64]&(1<<(k%64)) == 0 {
				seen[k/64] |= 1 << (k % 64)
				touched = append(touched, k)
			}
		}
		return true
	})
	if err != nil {
		return bs, err
	}
	flush()
	nblocks := uint32((last + block - 1) / block)
	bs.blocks = int(nblocks)
	keys := make([]uint32, 0, len(lists))
	for k := range lists {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	bs.trigrams = len(keys)
	head := make([]byte, 16)
	copy(head, "PSTG")
	binary.LittleEndian.PutUint32(head[4:], nblocks)
	binary.LittleEndian.PutUint32(head[8:], uint32(block))
	binary.LittleEndian.PutUint32(head[12:], uint32(len(keys)))
	dir := make([]byte, dirEntry*len(keys))
	var conts, body []byte
	for i, k := range keys {
		l := lists[k]
		bs.postings += len(l)
		first := len(conts) / contEntry
		for len(l) > 0 {
			c := l[0] >> 16
			n := 1
			for n < len(l) && l[n]>>16 == c {
				n++
			}
			part := l[:n]
			l = l[n:]
			for len(body)%8 != 0 {
				body = append(body, 0)
			}
			off := len(body)
			kind := uint32(0)
			if n >= denseMin {
				kind = 1
				bs.bitmaps++
				bm := make([]byte, 8192)
				for _, b := range part {
					lo := b & 0xFFFF
					bm[lo/8] |= 1 << (lo % 8)
				}
				body = append(body, bm...)
			} else {
				prev := uint32(0)
				for _, b := range part {
					lo := b & 0xFFFF
					body = binary.AppendUvarint(body, uint64(lo-prev))
					prev = lo
				}
			}
			var e [contEntry]byte
			binary.LittleEndian.PutUint32(e[0:], c)
			binary.LittleEndian.PutUint32(e[4:], uint32(n))
			binary.LittleEndian.PutUint32(e[8:], kind)
			binary.LittleEndian.PutUint64(e[12:], uint64(off))
			binary.LittleEndian.PutUint32(e[20:], uint32(len(body)-off))
			conts = append(conts, e[:]...)
		}
		e := dir[i*dirEntry:]
		binary.LittleEndian.PutUint32(e, k)
		binary.LittleEndian.PutUint32(e[4:], uint32(first))
		binary.LittleEndian.PutUint32(e[8:], uint32(len(conts)/contEntry-first))
	}
	// The body's offsets are relative to its start, which is 8-aligned.
	pad := (8 - (len(head)+len(dir)+len(conts))%8) % 8
	f, err := os.Create(out)
	if err != nil {
		return bs, err
	}
	var nc [4]byte
	binary.LittleEndian.PutUint32(nc[:], uint32(len(conts)/contEntry))
	for _, part := range [][]byte{head, nc[:], dir, conts, make([]byte, pad), body} {
		if _, err := f.Write(part); err != nil {
			f.Close()
			return bs, err
		}
	}
	if err := f.Close(); err != nil {
		return bs, err
	}
	bs.fileBytes = int64(len(head) + 4 + len(dir) + len(conts) + pad + len(body))
	return bs, nil
}

const (
	dirEntry  = 12   // key, first container, containers
	contEntry = 24   // chunk, count, kind, offset, length
	denseMin  = 4096 // blocks in a container from which it is a bitmap
)

// postings is the mapped file.
type postings struct {
	m           []byte
	nblocks     uint32
	block       uint64
	ntri, ncont int
	dir, conts  []byte
	body        []byte
}

func openPostings(path string) (*postings, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	if len(m) < 20 || string(m[:4]) != "PSTG" {
		return nil, errors.New("not a postings file")
	}
	p := &postings{m: m, nblocks: binary.LittleEndian.Uint32(m[4:]), block: uint64(binary.LittleEndian.Uint32(m[8:])),
		ntri: int(binary.LittleEndian.Uint32(m[12:])), ncont: int(binary.LittleEndian.Uint32(m[16:]))}
	at := 20
	p.dir = m[at : at+dirEntry*p.ntri]
	at += dirEntry * p.ntri
	p.conts = m[at : at+contEntry*p.ncont]
	at += contEntry * p.ncont
	at += (8 - (at-4)%8) % 8
	p.body = m[at:]
	return p, nil
}

func (p *postings) close() { syscall.Munmap(p.m) }

// gram is one of a needle's trigrams: its containers, and the one of the
// chunk being searched, decoded.
type gram struct {
	conts []byte // its container entries
	at    int    // the next container entry to look at
	count int    // blocks in the current chunk's container
	bm    []byte // the current container as a bitmap, or
	arr   []uint16
	pos   int // where a membership test stands in arr
}

// seek makes g's current container the one of chunk c; false when g has
// none there.
func (p *postings) seek(g *gram, c uint32) bool {
	for g.at*contEntry < len(g.conts) {
		e := g.conts[g.at*contEntry:]
		cc := binary.LittleEndian.Uint32(e)
		if cc < c {
			g.at++
			continue
		}
		if cc > c {
			return false
		}
		g.count = int(binary.LittleEndian.Uint32(e[4:]))
		off, n := binary.LittleEndian.Uint64(e[12:]), binary.LittleEndian.Uint32(e[20:])
		b := p.body[off : off+uint64(n)]
		g.pos = 0
		if binary.LittleEndian.Uint32(e[8:]) == 1 {
			g.bm, g.arr = b, g.arr[:0]
			return true
		}
		g.bm = nil
		g.arr = g.arr[:0]
		prev := uint16(0)
		for len(b) > 0 {
			d, k := binary.Uvarint(b)
			b = b[k:]
			prev += uint16(d)
			g.arr = append(g.arr, prev)
		}
		return true
	}
	return false
}

// has reports whether g's current container holds lo; calls for one
// chunk come in ascending lo.
func (g *gram) has(lo uint16) bool {
	if g.bm != nil {
		return g.bm[lo/8]&(1<<(lo%8)) != 0
	}
	for g.pos < len(g.arr) && g.arr[g.pos] < lo {
		g.pos++
	}
	return g.pos < len(g.arr) && g.arr[g.pos] == lo
}

// search returns the hits (at most limit; all when 0) and the texts read.
func (p *postings) search(st *store.Store, needle []byte, limit int) (hits, reads int, err error) {
	var gs []*gram
	seenKey := map[uint32]bool{}
	for i := 0; i+gramLen <= len(needle); i++ {
		k := gramKey(needle[i:])
		if seenKey[k] {
			continue
		}
		seenKey[k] = true
		j := sort.Search(p.ntri, func(j int) bool { return binary.LittleEndian.Uint32(p.dir[j*dirEntry:]) >= k })
		if j == p.ntri || binary.LittleEndian.Uint32(p.dir[j*dirEntry:]) != k {
			return 0, 0, nil
		}
		e := p.dir[j*dirEntry:]
		first, n := binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:])
		gs = append(gs, &gram{conts: p.conts[int(first)*contEntry : int(first+n)*contEntry]})
	}
	if len(gs) == 0 {
		return 0, 0, errors.New("the study answers needles of 3 bytes or more only")
	}
	r, err := st.NewTextReader(1, st.LastSeq())
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	visit := func(b uint32) bool {
		lo := uint64(b)*p.block + 1
		for seq := lo; seq < lo+p.block; seq++ {
			text, ok, err2 := r.Text(seq)
			if err2 != nil {
				err = err2
				return false
			}
			if !ok {
				continue
			}
			reads++
			if bytes.Contains(text, needle) {
				hits++
				if limit > 0 && hits >= limit {
					return false
				}
			}
		}
		return true
	}
	chunks := (p.nblocks + 0xFFFF) >> 16
chunk:
	for c := uint32(0); c < chunks; c++ {
		for _, g := range gs {
			if !p.seek(g, c) {
				continue chunk
			}
		}
		slices.SortFunc(gs, func(a, b *gram) int { return a.count - b.count })
		d, others := gs[0], gs[1:]
		next := func(lo uint16) bool {
			for _, g := range others {
				if !g.has(lo) {
					return true
				}
			}
			return visit(c<<16 | uint32(lo))
		}
		if d.bm != nil {
			for w := 0; w < 1024; w++ {
				x := binary.LittleEndian.Uint64(d.bm[w*8:])
				for x != 0 {
					lo := uint16(w*64 + bits.TrailingZeros64(x))
					x &= x - 1
					if !next(lo) {
						return hits, reads, err
					}
				}
			}
			continue
		}
		for _, lo := range d.arr {
			if !next(lo) {
				return hits, reads, err
			}
		}
	}
	return hits, reads, err
}
