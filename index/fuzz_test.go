package index

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzPostingFileNeverPanics: whatever bytes a postings file holds, opening
// it and reading every container either works or fails with an error;
// nothing panics or reads out of bounds. Seeded with real files (a run and
// a bitmap-heavy one) and cut or damaged copies of them.
func FuzzPostingFileNeverPanics(f *testing.F) {
	dir := f.TempDir()
	for _, lists := range []*postingLists{
		listsOf(map[uint32][]uint16{0x616263: {0, 3, 9}, 0x626364: {3}, pairKey | 0x6263: {9}, lastKey | 0x64: {0, 3}}),
		func() *postingLists {
			m := map[uint32][]uint16{}
			for k := uint32(0); k < 300; k++ {
				for o := uint16(0); o < 64; o += uint16(1 + k%5) {
					m[k*977] = append(m[k*977], o)
				}
			}
			return listsOf(m)
		}(),
	} {
		path, err := lists.writeTo(dir, 1, 64)
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		damaged := append([]byte(nil), b...)
		damaged[headerSize+4] ^= 0xff
		f.Add(damaged)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.pg")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		pf, err := openFile(path)
		if err != nil {
			return
		}
		defer pf.close()
		if pf.check() != nil {
			return
		}
		for i := 0; i < pf.keys && i < 4096; i++ {
			c, err := pf.entry(i)
			if err != nil {
				continue
			}
			offs, err := c.decode(nil)
			if err != nil {
				continue
			}
			for _, o := range offs {
				if uint32(o) >= pf.span {
					t.Fatalf("container %d holds offset %d past the file's span %d", i, o, pf.span)
				}
				if c.dense && !c.has(uint32(o)) {
					t.Fatalf("a dense container decodes offset %d it does not hold", o)
				}
			}
		}
		pf.search(0x616263) // a lookup reads what it reads, or fails
	})
}
