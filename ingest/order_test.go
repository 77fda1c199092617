package ingest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestSortByStartOrdersSessionsByWhenTheyBegan(t *testing.T) {
	root := t.TempDir()
	// Files not named by Pi are placed by their modification time.
	exported := filepath.Join(root, "exports", "mine.jsonl")
	archive := filepath.Join(root, "backups", "all.tar.zst")
	for p, mtime := range map[string]time.Time{
		exported: time.Date(2026, 3, 1, 12, 0, 0, 500e6, time.UTC),
		archive:  time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	// A journal not named by Pi (a copy, an export) is placed by its
	// header's time, whatever its modification time.
	copied := filepath.Join(root, "copies", "renamed.jsonl")
	os.MkdirAll(filepath.Dir(copied), 0o755)
	header := `{"type":"session","version":3,"id":"x","timestamp":"2025-06-01T10:00:00.250Z","cwd":"/w"}` + "\n"
	if err := os.WriteFile(copied, []byte(header+`{"type":"message"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(copied, later, later)
	in := []string{
		copied,
		filepath.Join(root, "--a-project--", "2026-05-01T09-00-00-000Z_0197.jsonl"),
		filepath.Join(root, "--a-project--", "2026-01-10T08-30-00-000Z_0194.jsonl"),
		exported,
		filepath.Join(root, "--z-project--", "2025-12-24T23-59-59-999Z_0193.jsonl"),
		filepath.Join(root, "--b-project--", "2026-03-01T12-00-00-500Z_0195.jsonl"), // same time as the export
		archive,
		filepath.Join(root, "gone", "2026-13-notatime.jsonl"), // neither a Pi name nor a file: last
	}
	got := slices.Clone(in)
	SortByStart(got)
	want := []string{
		archive,
		copied,
		filepath.Join(root, "--z-project--", "2025-12-24T23-59-59-999Z_0193.jsonl"),
		filepath.Join(root, "--a-project--", "2026-01-10T08-30-00-000Z_0194.jsonl"),
		filepath.Join(root, "--b-project--", "2026-03-01T12-00-00-500Z_0195.jsonl"),
		exported, // the same key: path order
		filepath.Join(root, "--a-project--", "2026-05-01T09-00-00-000Z_0197.jsonl"),
		filepath.Join(root, "gone", "2026-13-notatime.jsonl"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("SortByStart:\n got %q\nwant %q", got, want)
	}
}

func TestIsPiStamp(t *testing.T) {
	for name, want := range map[string]bool{
		"2026-11-29T10-15-00-123Z_019a.jsonl": true,
		"2026-11-29T10-15-00-123Z":            true,
		"2026-11-29T10:15:00.123Z_019a.jsonl": false, // not as Pi writes it in a name
		"2026-11-29T10-15-00Z_019a.jsonl":     false,
		"session.jsonl":                       false,
		"":                                    false,
	} {
		if got := isPiStamp(name); got != want {
			t.Errorf("isPiStamp(%q) = %v, want %v", name, got, want)
		}
	}
}
