package export

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/store"
)

// archiveJournals are journals with distinct session ids. (The shared
// fixtures torn.jsonl and tree.jsonl share one id; see
// TestArchiveRoundTrip's note.)
func archiveJournals(t *testing.T) []journalFile {
	var out []journalFile
	seen := map[string]bool{}
	for _, j := range journals(t) {
		// One journal per session and per file name (Pi 1.6's fixtures
		// share names with the shared 0.73.1 ones; members would be renamed).
		id, base := firstLineOf(t, j.path), "file:"+filepath.Base(j.path)
		if seen[id] || seen[base] || j.name == "fixture-torn" {
			continue
		}
		seen[id], seen[base] = true, true
		out = append(out, j)
	}
	return out
}

func writeArchiveFile(t *testing.T, st *store.Store, sel Selection, path string) ArchiveStats {
	t.Helper()
	ss, err := Select(st, sel)
	if err != nil {
		t.Fatal(err)
	}
	var stats ArchiveStats
	err = WriteFile(path, true, func(w io.Writer) error {
		var err error
		stats, err = WriteArchive(context.Background(), w, st, ss, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

// TestArchiveRoundTrip: every session archived into a .tar.zst and read
// back by ingest.Archive into a fresh store has the same entries and tree;
// importing the archive again adds nothing.
func TestArchiveRoundTrip(t *testing.T) {
	st := openStore(t)
	sids := map[string]string{} // name → sid
	for _, j := range archiveJournals(t) {
		sids[j.name] = load(t, st, j.path)
	}
	before := st.LastSeq()
	arch := filepath.Join(t.TempDir(), "all.tar.zst")
	stats := writeArchiveFile(t, st, Selection{All: true}, arch)
	if st.LastSeq() != before {
		t.Fatal("archiving wrote to the store")
	}
	if stats.Sessions != len(sids) {
		t.Fatalf("archived %d sessions, want %d", stats.Sessions, len(sids))
	}
	st2 := openStore(t)
	reps, err := ingest.Archive(st2, arch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != len(sids) {
		t.Fatalf("imported %d members, want %d", len(reps), len(sids))
	}
	for name, sid := range sids {
		if !reflect.DeepEqual(records(t, st, sid), records(t, st2, sid)) {
			t.Errorf("%s: entries differ after the archive round trip", name)
		}
		if !reflect.DeepEqual(pathIDs(t, st, sid, ""), pathIDs(t, st2, sid, "")) {
			t.Errorf("%s: active path differs", name)
		}
		si, _ := st2.Session(sid)
		if !strings.HasPrefix(si.File, arch+"!--") || !strings.HasSuffix(si.File, ".jsonl") {
			t.Errorf("%s: stored under file key %q, want ARCHIVE!MEMBER", name, si.File)
		}
	}
	// Importing again adds nothing.
	last := st2.LastSeq()
	reps, err = ingest.Archive(st2, arch, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if r.Added != 0 || r.Replaced != 0 {
			t.Errorf("re-import of %s added %d, replaced %d", r.Path, r.Added, r.Replaced)
		}
	}
	if st2.LastSeq() != last {
		t.Error("re-import stored new entries")
	}
	// An export from the imported store gives the same archive bytes of
	// every journal.
	arch2 := filepath.Join(t.TempDir(), "again.tar.zst")
	writeArchiveFile(t, st2, Selection{All: true}, arch2)
	if a, b := members(t, arch), members(t, arch2); !reflect.DeepEqual(a, b) {
		t.Error("archiving the imported sessions gives other members")
	}
}

// members reads an archive's members into memory (small test archives only).
func members(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
	}
}

func TestArchiveMembersAreTheJournals(t *testing.T) {
	st := openStore(t)
	want := map[string]string{}
	for _, j := range archiveJournals(t) {
		load(t, st, j.path)
		b, _ := os.ReadFile(j.path)
		want[filepath.Base(j.path)] = string(b)
	}
	arch := filepath.Join(t.TempDir(), "a.tar.zst")
	writeArchiveFile(t, st, Selection{All: true}, arch)
	for name, body := range members(t, arch) {
		if !strings.HasPrefix(name, "--") || strings.Count(name, "/") != 1 {
			t.Errorf("member %q is not laid out as --CWD--/FILE", name)
		}
		if w, ok := want[filepath.Base(name)]; !ok || w != body {
			t.Errorf("member %s is not its journal byte for byte", name)
		}
	}
	if got := MemberName(&store.SessionInfo{ID: "x", Cwd: "/home/me/proj", File: "/p/2026_x.jsonl"}); got != "--home-me-proj--/2026_x.jsonl" {
		t.Errorf("MemberName = %q", got)
	}
}

func TestArchiveSelection(t *testing.T) {
	st := openStore(t)
	load(t, st, "testdata/journals/branches.jsonl")
	load(t, st, "testdata/journals/hostile.jsonl")
	count := func(sel Selection) int {
		ss, err := Select(st, sel)
		if err != nil {
			t.Fatal(err)
		}
		return len(ss)
	}
	if n := count(Selection{Project: "/home/dev/café-app"}); n != 1 {
		t.Errorf("project: %d sessions", n)
	}
	day := func(s string) time.Time { tm, _ := time.Parse("2006-01-02", s); return tm }
	// branches was active on 2026-03-04; hostile started on 2026-03-05.
	for d, want := range map[string]int{"2026-03-06": 0, "2026-03-05": 1, "2026-03-04": 2} {
		if n := count(Selection{Since: day(d)}); n != want {
			t.Errorf("since %s: %d sessions, want %d", d, n, want)
		}
	}
	if n := count(Selection{Until: day("2026-03-05")}); n != 1 { // hostile started on 2026-03-05
		t.Errorf("until: %d sessions", n)
	}
	if _, err := Select(st, Selection{}); err == nil {
		t.Error("an empty selection is accepted")
	}
	now := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-03-01":           day("2026-03-01"),
		"2026-03-01T10:00:00Z": time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"2w":                   now.Add(-14 * 24 * time.Hour),
		"36h":                  now.Add(-36 * time.Hour),
	} {
		if got, err := ParseTime(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseTime("yesterday", now); err == nil {
		t.Error("ParseTime accepts nonsense")
	}
}

// TestArchiveMemberChanged: a member that grew is resumed; a member whose
// read bytes changed replaces its session.
func TestArchiveMemberChanged(t *testing.T) {
	b, _ := os.ReadFile("testdata/journals/branches.jsonl")
	lines := strings.SplitAfter(string(b), "\n")
	dir := t.TempDir()
	arch := filepath.Join(dir, "x.tar.zst")
	write := func(body string) {
		var buf bytes.Buffer
		zw, _ := zstd.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		tw.WriteHeader(&tar.Header{Name: "README.txt", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
		tw.Write([]byte("hi"))
		tw.WriteHeader(&tar.Header{Name: "--p--/s.jsonl", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
		tw.Close()
		zw.Close()
		if err := os.WriteFile(arch, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := openStore(t)
	imp := func() ingest.FileReport {
		reps, err := ingest.Archive(st, arch, nil)
		if err != nil || len(reps) != 1 {
			t.Fatalf("%v, %d reports", err, len(reps))
		}
		return reps[0]
	}
	write(strings.Join(lines[:10], ""))
	if r := imp(); r.Added != 9 {
		t.Fatalf("first import added %d", r.Added)
	}
	write(strings.Join(lines, ""))
	if r := imp(); r.Added != len(lines)-10-1 || r.Rewritten { // SplitAfter leaves a last ""
		t.Fatalf("grown member: added %d, rewritten %v", r.Added, r.Rewritten)
	}
	changed := strings.Replace(strings.Join(lines, ""), "Die Tests", "Die Prüfungen", 1)
	write(changed)
	r := imp()
	if !r.Rewritten || r.Replaced != 1 { // one entry's bytes changed, in place
		t.Fatalf("changed member: rewritten %v, replaced %d", r.Rewritten, r.Replaced)
	}
	tr, _ := st.Tree(r.Session)
	if tr.Len() != len(lines)-2 {
		t.Errorf("after a rewrite the session has %d entries, want %d", tr.Len(), len(lines)-2)
	}
}

func TestTruncatedArchiveIsAnError(t *testing.T) {
	st := openStore(t)
	load(t, st, "testdata/journals/branches.jsonl")
	arch := filepath.Join(t.TempDir(), "a.tar.zst")
	writeArchiveFile(t, st, Selection{All: true}, arch)
	full, _ := os.ReadFile(arch)
	os.WriteFile(arch, full[:len(full)/2], 0o644)
	st2 := openStore(t)
	_, err := ingest.Archive(st2, arch, nil)
	if err == nil || !strings.Contains(err.Error(), "complete?") {
		t.Errorf("a truncated archive reads with %v", err)
	}
	os.WriteFile(arch, []byte("not zstd at all"), 0o644)
	if _, err := ingest.Archive(st2, arch, nil); err == nil {
		t.Error("garbage reads without error")
	}
}

// synthSource serves sessions made up on the fly: many sessions of many
// ~1 KB entries, none of it held in memory.
type synthSource struct {
	sessions, perSession int
}

func (s *synthSource) line(seq uint64) []byte {
	sess, i := (seq-1)/uint64(s.perSession), (seq-1)%uint64(s.perSession)
	parent := "null"
	if i > 0 {
		parent = strconv.Quote(fmt.Sprintf("%08x", seq-1))
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"message","id":"%08x","parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"`, seq, parent)
	x := seq*2654435761 + sess
	for b.Len() < 1000 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b.WriteString(strconv.FormatUint(x, 36))
		b.WriteByte(' ')
	}
	b.WriteString(`"}}`)
	return b.Bytes()
}

func (s *synthSource) Session(sid string) (*store.SessionInfo, error) {
	return &store.SessionInfo{ID: sid, Cwd: "/synth", Created: "2026-01-01T00:00:00.000Z", Version: 3,
		Header: `{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/synth"}`}, nil
}

func (s *synthSource) SessionMetas(sid string) ([]*store.Meta, error) {
	n, _ := strconv.Atoi(strings.TrimPrefix(sid, "s"))
	out := make([]*store.Meta, s.perSession)
	for i := range out {
		seq := uint64(n*s.perSession + i + 1)
		out[i] = &store.Meta{Seq: seq, Session: sid, RawLen: len(s.line(seq))}
	}
	return out, nil
}

func (s *synthSource) Raw(seq uint64) ([]byte, error) { return s.line(seq), nil }
func (s *synthSource) Tree(string) (*store.SessionTree, error) {
	return nil, fmt.Errorf("not used")
}
func (s *synthSource) FileState(string) (*store.FileState, error) { return nil, store.ErrNotFound }

// TestArchiveStreamsInConstantMemory archives far more journal bytes than
// the heap may grow by. PI_HISTORY_EXPORT_ENTRIES sets the entry count
// (for example 1000000 for ~1 GB) and the test prints MB/s and peak heap.
func TestArchiveStreamsInConstantMemory(t *testing.T) {
	entries := 60_000 // ~60 MB of journal lines
	if testing.Short() || raceEnabled {
		entries = 15_000
	}
	if v, err := strconv.Atoi(os.Getenv("PI_HISTORY_EXPORT_ENTRIES")); err == nil && v > 0 {
		entries = v
	}
	per := 500
	src := &synthSource{sessions: entries / per, perSession: per}
	var infos []*store.SessionInfo
	for i := 0; i < src.sessions; i++ {
		si, _ := src.Session("s" + strconv.Itoa(i))
		infos = append(infos, si)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	start := time.Now()
	cw := &countWriter{w: io.Discard}
	stats, err := writeArchive(context.Background(), cw, src, infos, func(s ArchiveStats) {
		if s.Sessions%10 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start).Seconds()
	grow := int64(peak) - int64(base)
	t.Logf("%d entries, %.0f MB of journals → %.1f MB compressed in %.1fs (%.1f MB/s); heap in use grew by at most %.1f MB",
		stats.Entries, float64(stats.Bytes)/1e6, float64(cw.n)/1e6, el, float64(stats.Bytes)/1e6/el, float64(grow)/1e6)
	if stats.Entries != src.sessions*per {
		t.Fatalf("archived %d entries, want %d", stats.Entries, src.sessions*per)
	}
	const bound = 40 << 20
	if grow > bound {
		t.Fatalf("heap in use grew by %d MB while streaming %d MB; want under %d MB", grow>>20, stats.Bytes>>20, bound>>20)
	}
}
