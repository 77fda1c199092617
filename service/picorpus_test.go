package service_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/service"
	"github.com/pi-history/pi-history/store"
)

// TestPicorpusImportsWithTheManifestCounts generates a corpus with the
// shared picorpus generator and checks that importing it stores exactly the
// entries per type and per message role its MANIFEST.json lists.
func TestPicorpusImportsWithTheManifestCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a corpus")
	}
	gen := filepath.Join(testutil.SharedDir(t), "tools", "picorpus")
	out := t.TempDir()
	cmd := exec.Command("go", "run", ".", "-out", out, "-entries", "6000", "-seed", "3", "-legacy", "0.05")
	cmd.Dir = gen
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("picorpus: %v\n%s", err, b)
	}
	var man struct {
		Entries  int            `json:"entries"`
		Sessions int            `json:"sessions"`
		Types    map[string]int `json:"types"`
		Roles    map[string]int `json:"roles"`
		TornFile string         `json:"tornFile"`
	}
	b, err := os.ReadFile(filepath.Join(out, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	svc, err := service.Open(service.Options{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	sum, err := svc.Import(t.Context(), []string{out}, nil)
	if err != nil {
		t.Fatal(err)
	}
	types, roles := map[string]int{}, map[string]int{}
	total := 0
	svc.Store.ScanMetas(1, svc.Store.LastSeq(), func(m *store.Meta) bool {
		total++
		types[m.Type]++
		if m.Role != "" {
			roles[m.Role]++
		}
		return true
	})
	// The torn file's last line is half-written: it is not an entry yet.
	want := man.Entries
	if man.TornFile != "" {
		want--
		t.Logf("torn file %s: its last entry is pending", filepath.Base(man.TornFile))
	}
	if total != want || sum.Entries != want {
		t.Fatalf("stored %d entries (import said %d), manifest has %d", total, sum.Entries, want)
	}
	if man.TornFile == "" {
		if !reflect.DeepEqual(types, man.Types) {
			t.Errorf("types %v\nmanifest %v", types, man.Types)
		}
		if !reflect.DeepEqual(roles, man.Roles) {
			t.Errorf("roles %v\nmanifest %v", roles, man.Roles)
		}
	}
	if sum.Sessions != man.Sessions {
		t.Errorf("sessions %d, manifest %d", sum.Sessions, man.Sessions)
	}
}
