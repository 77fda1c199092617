// Command codecs compares compression codecs on what an imported store
// holds, as decisions 400 and 410 chose them: each key kind's values as
// Pebble would see them (keys and values in blocks of -block bytes,
// compressed block by block), and the stored texts of store/texts.pack (each
// compressed on its own). For each codec it prints the bytes, the time to
// compress and the best of three passes decompressing everything into a
// reused buffer, with the process's Go heap and RSS at the end.
//
//	go run ./bench/codecs -store DATA/store [-block 32768] [-kinds TEIO]
//
// The store is opened read-only (no server may own it) and left as it was.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/minio/minlz"
	"github.com/pierrec/lz4/v4"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
	"github.com/pi-history/pi-history/store"
)

// codec compresses a block into a new slice, and decompresses one into
// buf (of the block's length or more).
type codec struct {
	name string
	pack func(b []byte) []byte
	// unpack decompresses b into buf[:n], n its original length.
	unpack func(b, buf []byte, n int) error
}

func codecs() []codec {
	z1, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	z3, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	zd, _ := zstd.NewReader(nil)
	unzstd := func(b, buf []byte, n int) error { _, err := zd.DecodeAll(b, buf[:0]); return err }
	unminlz := func(b, buf []byte, n int) error { _, err := minlz.Decode(buf, b); return err }
	unlz4 := func(b, buf []byte, n int) error { _, err := lz4.UncompressBlock(b, buf[:n]); return err }
	lz4With := func(c interface {
		CompressBlock(src, dst []byte) (int, error)
	}) func([]byte) []byte {
		return func(b []byte) []byte {
			out := make([]byte, lz4.CompressBlockBound(len(b)))
			n, _ := c.CompressBlock(b, out)
			return out[:n]
		}
	}
	return []codec{
		{"zstd level 1", func(b []byte) []byte { return z1.EncodeAll(b, nil) }, unzstd},
		{"zstd level 3", func(b []byte) []byte { return z3.EncodeAll(b, nil) }, unzstd},
		{"MinLZ fastest", func(b []byte) []byte { o, _ := minlz.Encode(nil, b, minlz.LevelFastest); return o }, unminlz},
		{"MinLZ balanced", func(b []byte) []byte { o, _ := minlz.Encode(nil, b, minlz.LevelBalanced); return o }, unminlz},
		{"S2 better", func(b []byte) []byte { return s2.EncodeBetter(nil, b) }, func(b, buf []byte, n int) error { _, err := s2.Decode(buf, b); return err }},
		{"LZ4 fast", lz4With(&lz4.Compressor{}), unlz4},
		{"LZ4 HC level 2", lz4With(&lz4.CompressorHC{Level: lz4.Level2}), unlz4},
	}
}

func main() {
	dir := flag.String("store", "", "an imported store directory (DATA/store)")
	block := flag.Int("block", 32<<10, "block size for the key kinds, as Pebble's tables use")
	kinds := flag.String("kinds", "TEIO", "key kinds (tags) to compare, then the stored texts (R, the raw lines, holds 1.5 GB at a million entries: add it to see them)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "give -store DATA/store")
		os.Exit(2)
	}
	db, err := pebble.Open(*dir, &pebble.Options{ReadOnly: true, Logger: quiet{}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "codecs: open %s: %v\n", *dir, err)
		os.Exit(1)
	}
	for _, tag := range []byte(*kinds) {
		blocks, err := kindBlocks(db, tag, *block)
		if err != nil {
			fmt.Fprintf(os.Stderr, "codecs: read kind %c: %v\n", tag, err)
			os.Exit(1)
		}
		compare(fmt.Sprintf("kind %c in blocks of %d bytes", tag, *block), blocks)
	}
	db.Close()
	texts, err := storedTexts(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "codecs: %v\n", err)
		os.Exit(1)
	}
	compare("stored texts, each on its own", texts)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mem, _ := benchkit.ReadMemory(os.Getpid())
	fmt.Printf("memory: Go heap in use %s MB (it holds the blocks and texts compared), RSS %s MB, peak %s MB\n",
		benchkit.MB(int64(ms.HeapInuse)), benchkit.MB(mem.RSS), benchkit.MB(mem.Peak))
}

// kindBlocks returns tag's keys and values, one after another, cut into
// blocks of about size bytes.
func kindBlocks(db *pebble.DB, tag byte, size int) ([][]byte, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tag}, UpperBound: []byte{tag + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var blocks [][]byte
	var cur []byte
	for it.First(); it.Valid(); it.Next() {
		cur = append(append(cur, it.Key()...), it.Value()...)
		if len(cur) >= size {
			blocks, cur = append(blocks, cur), nil
		}
	}
	if len(cur) > 0 {
		blocks = append(blocks, cur)
	}
	return blocks, it.Error()
}

// storedTexts returns every text the store at dir holds once (in
// store/texts.pack, or under X in an older store), each once, unpacked by
// the store's own reader.
func storedTexts(dir string) ([][]byte, error) {
	st, err := store.OpenWith(dir, store.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("open the store: %w", err)
	}
	defer st.Close()
	r := st.NewSharedReader()
	defer r.Close()
	seen := map[store.TextRef]bool{}
	var texts [][]byte
	err = st.ScanTextRefs([]store.SeqRange{{Lo: 1, Hi: max(st.LastSeq(), 1)}}, false, func(_ uint64, _ []byte, ref *store.TextRef) (bool, error) {
		if ref == nil || seen[*ref] {
			return true, nil
		}
		seen[*ref] = true
		t, err := r.Text(ref)
		if err != nil {
			return false, err
		}
		texts = append(texts, bytes.Clone(t))
		return true, nil
	})
	return texts, err
}

// compare prints, for each codec, what it makes of the blocks.
func compare(what string, blocks [][]byte) {
	raw, longest := 0, 0
	for _, b := range blocks {
		raw, longest = raw+len(b), max(longest, len(b))
	}
	fmt.Printf("%s: %d blocks, %.1f MB\n", what, len(blocks), float64(raw)/1e6)
	buf := make([]byte, longest)
	for _, c := range codecs() {
		t0 := time.Now()
		packed := make([][]byte, len(blocks))
		n := 0
		for i, b := range blocks {
			packed[i] = c.pack(b)
			n += len(packed[i])
		}
		enc := time.Since(t0)
		best := time.Duration(1 << 62)
		for range 3 {
			t1 := time.Now()
			for i, p := range packed {
				if err := c.unpack(p, buf, len(blocks[i])); err != nil {
					fmt.Fprintf(os.Stderr, "codecs: %s: block %d: %v\n", c.name, i, err)
					os.Exit(1)
				}
			}
			best = min(best, time.Since(t1))
		}
		packed = nil
		runtime.GC() // what one codec made is garbage before the next makes its own
		fmt.Printf("  %-15s %8.1f MB (%.2fx)  compress %6.2f s  decompress %7.1f ms (%5.0f MB/s)\n",
			c.name, float64(n)/1e6, float64(raw)/float64(n), enc.Seconds(), float64(best.Microseconds())/1000, float64(raw)/1e6/best.Seconds())
	}
}

// quiet drops Pebble's log lines (a read-only open replays the log).
type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
