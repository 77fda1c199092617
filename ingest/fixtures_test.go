package ingest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

type fixtureFacts struct {
	Entries    int      `json:"entries"`
	Leaf       string   `json:"leaf"`
	ActivePath []string `json:"activePath"`
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestSharedFixturesReproduceTheirFacts(t *testing.T) {
	dir := filepath.Join(testutil.SharedDir(t), "fixtures", "pi")
	raw, err := os.ReadFile(filepath.Join(dir, "FIXTURES.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts map[string]fixtureFacts
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	for name, want := range facts {
		t.Run(name, func(t *testing.T) {
			st := openStore(t)
			rep, err := File(st, filepath.Join(dir, name+".jsonl"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Added != want.Entries {
				t.Fatalf("added %d entries, want %d (problems %v)", rep.Added, want.Entries, rep.Problems)
			}
			if want.Leaf == "" {
				return
			}
			tr, err := st.Tree(rep.Session)
			if err != nil {
				t.Fatal(err)
			}
			legacy := strings.HasPrefix(name, "legacy")
			if !legacy && tr.Leaf() != want.Leaf {
				t.Errorf("leaf %s, want %s", tr.Leaf(), want.Leaf)
			}
			path, err := tr.Path(tr.Leaf())
			if err != nil {
				t.Fatal(err)
			}
			if len(path) != len(want.ActivePath) {
				t.Fatalf("active path has %d entries, want %d", len(path), len(want.ActivePath))
			}
			if !legacy {
				var got []string
				for _, e := range path {
					got = append(got, e.ID)
				}
				if !reflect.DeepEqual(got, want.ActivePath) {
					t.Errorf("active path %v, want %v", got, want.ActivePath)
				}
			}
		})
	}
}

func TestLegacyV1GetsDeterministicIDs(t *testing.T) {
	dir := filepath.Join(testutil.SharedDir(t), "fixtures", "pi")
	read := func() []string {
		st := openStore(t)
		rep, err := File(st, filepath.Join(dir, "legacy-v1.jsonl"), nil)
		if err != nil {
			t.Fatal(err)
		}
		tr, _ := st.Tree(rep.Session)
		var ids []string
		for _, e := range tr.Entries {
			ids = append(ids, e.ID)
		}
		return ids
	}
	a, b := read(), read()
	if !reflect.DeepEqual(a, b) || len(a) != 6 {
		t.Fatalf("v1 ids differ between reads or wrong count: %v vs %v", a, b)
	}
	// The compaction's firstKeptEntryIndex 3 names the entry on line index 3.
	if journal.V1ID("legacy-v1", 3) != a[2] {
		t.Errorf("firstKeptEntryIndex 3 should map to the third entry's id %s", a[2])
	}
}
