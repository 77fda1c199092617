// Command export measures the streaming archive export: every session of a
// store written as one .tar.zst with export.WriteArchive, the way
// `pi-history export --archive` and the API write it.
//
// The store comes from -data (an existing pi-history data directory, read
// in place; stop `pi-history serve` first), or is built in a temporary
// directory from -corpus (a directory of Pi journals, e.g. one written by
// ../shared/tools/picorpus) or, by default, from generated journals
// (internal/testutil.Journal: messages, tool calls and results, custom
// entries, labels, compactions, branches), -entries in all, -per-session
// per journal. Only the store is built: an export needs no search index.
//
// It prints the archive's size, the export's MB/s (journal bytes, before
// compression) and entries/s, and peak RSS (VmHWM from /proc/self/status):
// for the whole process, and for the export alone (the peak is reset through
// /proc/self/clear_refs after the import, when the kernel allows it). With
// -verify (the default) it reads the archive back and checks that it holds
// every session's lines.
//
//	go run ./bench/export -entries 100000
//	go run ./bench/export -entries 1000000 -out /tmp/all.tar.zst
//	go run ./bench/export -data ~/.local/share/pi-history
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/pi-history/pi-history/export"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/store"
)

func main() {
	data := flag.String("data", "", "existing pi-history data directory to export (its store is only read)")
	corpus := flag.String("corpus", "", "directory of Pi journals to import into a temporary store (default: generate)")
	entries := flag.Int("entries", 100_000, "generated corpus: entries in all")
	perSession := flag.Int("per-session", 2_000, "generated corpus: entries per session")
	out := flag.String("out", "", "archive file to write (default: a temporary file, removed at the end)")
	verify := flag.Bool("verify", true, "read the archive back and check its members")
	keep := flag.Bool("keep", false, "keep the temporary directory")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the export here")
	flag.Parse()
	if err := run(*data, *corpus, *entries, *perSession, *out, *verify, *keep, *prof); err != nil {
		fmt.Fprintln(os.Stderr, "bench/export:", err)
		os.Exit(1)
	}
}

// One piece (121 lines): one export run, read top to bottom (the data
// directory given or built from the corpus, every session selected, the
// export timed with its own peak memory, then verified when asked); its
// steps share the directory and the store it opens.
func run(data, corpus string, entries, perSession int, out string, verify, keep bool, prof string) error {
	if data != "" && corpus != "" {
		return errors.New("give -data or -corpus, not both")
	}
	if perSession <= 0 || entries <= 0 {
		return errors.New("-entries and -per-session must be positive")
	}
	tmp, err := os.MkdirTemp("", "bench-export-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("directory:", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	var st *store.Store
	if data != "" {
		if st, err = store.Open(filepath.Join(data, "store")); err != nil {
			return fmt.Errorf("open the store of %s (is pi-history serve running?): %w", data, err)
		}
	} else {
		if corpus == "" {
			corpus = filepath.Join(tmp, "corpus")
			t0 := time.Now()
			n, bytes, err := generate(corpus, entries, perSession)
			if err != nil {
				return err
			}
			fmt.Printf("corpus: %d sessions, %d entries, %.1f MB generated in %.1fs\n", n, entries, float64(bytes)/1e6, time.Since(t0).Seconds())
		}
		if st, err = store.Open(filepath.Join(tmp, "data", "store")); err != nil {
			return err
		}
		if err := importDir(st, corpus); err != nil {
			st.Close()
			return err
		}
	}
	defer st.Close()

	sessions, err := export.Select(st, export.Selection{All: true})
	if err != nil {
		return err
	}
	if len(sessions) == 0 {
		return errors.New("the store holds no sessions")
	}
	if out == "" {
		out = filepath.Join(tmp, "export.tar.zst")
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()

	// The import's garbage does not count: collect it, hand it back to the
	// kernel and reset the peak RSS, so that the second figure is the
	// export's own.
	hwmBefore := vmHWM()
	runtime.GC()
	debug.FreeOSMemory()
	reset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	rssStart := vmRSS()

	if prof != "" {
		pf, err := os.Create(prof)
		if err != nil {
			return err
		}
		defer pf.Close()
		pprof.StartCPUProfile(pf)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	t0 := time.Now()
	stats, err := export.WriteArchive(context.Background(), bw, st, sessions, nil)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	el := time.Since(t0).Seconds()
	if prof != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	hwmExport := vmHWM()

	fmt.Printf("archive: %s\n", out)
	fmt.Printf("export: %d sessions, %d entries, %.1f MB of journal -> %.1f MB .tar.zst (%.1fx) in %.2fs\n",
		stats.Sessions, stats.Entries, float64(stats.Bytes)/1e6, float64(stats.Written)/1e6,
		float64(stats.Bytes)/float64(max(stats.Written, 1)), el)
	fmt.Printf("throughput: %.1f MB/s of journal (%.1f MB/s written), %.0f entries/s\n",
		float64(stats.Bytes)/1e6/el, float64(stats.Written)/1e6/el, float64(stats.Entries)/el)
	fmt.Printf("peak RSS: whole process %.0f MB (%.0f MB before the export)", float64(max(hwmBefore, hwmExport))/1024, float64(hwmBefore)/1024)
	if reset {
		fmt.Printf("; during the export %.0f MB (RSS %.0f MB when it started)", float64(hwmExport)/1024, float64(rssStart)/1024)
	} else {
		fmt.Printf(" (the peak could not be reset before the export)")
	}
	fmt.Println()

	if verify {
		t1 := time.Now()
		members, lines, size, err := readBack(out)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if members != stats.Sessions || lines != stats.Entries+stats.Sessions || size != stats.Bytes {
			return fmt.Errorf("verify: the archive holds %d members, %d lines, %d bytes; the export reported %d sessions, %d entries (+ headers), %d bytes",
				members, lines, size, stats.Sessions, stats.Entries, stats.Bytes)
		}
		fmt.Printf("verify: %d members, %d lines, %.1f MB read back in %.2fs\n", members, lines, float64(size)/1e6, time.Since(t1).Seconds())
	}
	return nil
}

// generate writes journals of perSession entries (the last one shorter)
// until there are entries in all, in Pi's directory layout.
func generate(dir string, entries, perSession int) (sessions int, size int64, err error) {
	for done := 0; done < entries; sessions++ {
		n := min(perSession, entries-done)
		sid := fmt.Sprintf("0199e000-0000-7000-8000-%012d", sessions)
		proj := fmt.Sprintf("/home/dev/project%02d", sessions%16)
		text := testutil.Journal(testutil.GenOptions{Session: sid, Entries: n, Seed: uint64(sessions) + 1,
			BranchRate: 0.01, Compaction: 0.002, Cwd: proj})
		sub := filepath.Join(dir, "--"+strings.ReplaceAll(strings.TrimPrefix(proj, "/"), "/", "-")+"--")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return sessions, size, err
		}
		name := fmt.Sprintf("2026-03-01T09-00-00-000Z_%s.jsonl", sid)
		if err := os.WriteFile(filepath.Join(sub, name), []byte(text), 0o644); err != nil {
			return sessions, size, err
		}
		size += int64(len(text))
		done += n
	}
	return sessions, size, nil
}

// importDir reads every .jsonl file under dir into the store.
func importDir(st *store.Store, dir string) error {
	t0 := time.Now()
	var files, added int
	var size int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		rep, err := ingest.File(st, p, nil)
		if err != nil {
			return err
		}
		if len(rep.Problems) > 0 {
			fmt.Fprintf(os.Stderr, "import %s: %d problem(s), first: %s\n", p, len(rep.Problems), rep.Problems[0])
		}
		files++
		added += rep.Added
		size += rep.Bytes
		return nil
	})
	if err != nil {
		return fmt.Errorf("import %s: %w", dir, err)
	}
	el := time.Since(t0).Seconds()
	fmt.Printf("import: %d files, %d entries, %.1f MB in %.1fs (%.0f entries/s)\n", files, added, float64(size)/1e6, el, float64(added)/el)
	return nil
}

// readBack decompresses the archive and counts its members, lines and bytes.
func readBack(path string) (members, lines int, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	zr, err := zstd.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return 0, 0, 0, err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	buf := make([]byte, 1<<20)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return members, lines, size, nil
		}
		if err != nil {
			return members, lines, size, err
		}
		members++
		var n int64
		for {
			k, err := tr.Read(buf)
			lines += bytes.Count(buf[:k], []byte{'\n'})
			n += int64(k)
			if err == io.EOF {
				break
			}
			if err != nil {
				return members, lines, size, fmt.Errorf("%s: %w", h.Name, err)
			}
		}
		if n != h.Size {
			return members, lines, size, fmt.Errorf("%s: %d bytes, header says %d", h.Name, n, h.Size)
		}
		size += n
	}
}

// vmHWM and vmRSS read the peak and current resident set size, in KiB.
func vmHWM() int64 { return procStatus("VmHWM:") }
func vmRSS() int64 { return procStatus("VmRSS:") }

func procStatus(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
