package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMatchSessionsFindsWhatIsStored: a server's service follows the
// store with its session word index under DATA/index-sessions; a command's
// catches the index up when asked; a data directory opened read-only gets
// one in memory and writes nothing.
func TestMatchSessionsFindsWhatIsStored(t *testing.T) {
	for _, c := range []struct {
		name             string
		follow, readOnly bool
		onDisk           bool
	}{
		{"a server follows the store", true, false, true},
		{"a command catches up when asked", false, false, true},
		{"read-only: in memory", false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, sessions := t.TempDir(), t.TempDir()
			p := filepath.Join(sessions, "--p--", "s1.jsonl")
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`+"\n"+
				`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":"tune the telescope"}}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := Open(Options{DataDir: data})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Import(t.Context(), []string{sessions}, nil); err != nil {
				t.Fatal(err)
			}
			w.Close()
			// An import leaves the index built, so that a server has
			// nothing to build when it starts.
			if _, err := os.Stat(filepath.Join(data, SessionWordsDir)); err != nil {
				t.Fatalf("after the import: %v", err)
			}
			if c.readOnly {
				// A directory whose index an older version never built.
				os.RemoveAll(filepath.Join(data, SessionWordsDir))
			}
			svc, err := Open(Options{DataDir: data, FollowSessions: c.follow, ReadOnly: c.readOnly, MustExist: true})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			deadline := time.Now().Add(15 * time.Second)
			for {
				ms, err := svc.MatchSessions(context.Background(), "telescopes", 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(ms) == 1 && ms[0].Session == "s1" && strings.Contains(ms[0].Fragment, "telescope") {
					break
				}
				if !c.follow || time.Now().After(deadline) {
					t.Fatalf("MatchSessions(telescopes) = %+v, want s1", ms)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if _, err := os.Stat(filepath.Join(data, SessionWordsDir)); (err == nil) != c.onDisk {
				t.Errorf("%s on disk: %v, want %v", SessionWordsDir, err == nil, c.onDisk)
			}
		})
	}
}
