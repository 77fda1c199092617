package piextension_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
)

// generateAPITypes runs scripts/gen-api-types.mjs over spec (the repository's
// api/openapi.json when empty) and returns what it prints.
func generateAPITypes(t *testing.T, spec string) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	testutil.NeedTool(t, err == nil, "node")
	dir := filepath.Join(testutil.RepoRoot(), "pi-extension")
	args := []string{filepath.Join("scripts", "gen-api-types.mjs"), "--stdout"}
	if spec != "" {
		args = append(args, "--spec", spec)
	}
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node scripts/gen-api-types.mjs: %v\n%s", err, stderr.Bytes())
	}
	return out
}

// TestAPITypesMatchOpenAPI fails when the checked-in api-types.ts is not what
// the generator makes of api/openapi.json (one of them changed alone).
func TestAPITypesMatchOpenAPI(t *testing.T) {
	want := generateAPITypes(t, "")
	path := filepath.Join(testutil.RepoRoot(), "pi-extension", "api-types.ts")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the checked-in types: %v", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("pi-extension/api-types.ts differs from what api/openapi.json generates, first at line %d:\n  checked in: %q\n  generated:  %q\nrun `node pi-extension/scripts/gen-api-types.mjs` and commit the result", i+1, gl, wl)
		}
	}
}

// TestAPITypesFollowTheDocument changes the API document and checks that the
// generated types change with it, so the drift test above has something to
// catch: a new response member appears, typed, and a keyword the generator
// does not know is refused with its place instead of typed loosely.
func TestAPITypesFollowTheDocument(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "api", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(t *testing.T, change func(schemas map[string]any)) string {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		change(doc["components"].(map[string]any)["schemas"].(map[string]any))
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "openapi.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("new member", func(t *testing.T) {
		spec := edit(t, func(s map[string]any) {
			props := s["Status"].(map[string]any)["properties"].(map[string]any)
			props["quietUntil"] = map[string]any{"type": []any{"integer", "null"}, "description": "a new member"}
		})
		out := string(generateAPITypes(t, spec))
		if !strings.Contains(out, "\tquietUntil?: number | null;\n") {
			t.Errorf("the new member of Status is not in the generated types:\n%s", out)
		}
		if out == string(generateAPITypes(t, "")) {
			t.Error("the generated types did not change with the document")
		}
	})
	t.Run("unknown keyword", func(t *testing.T) {
		spec := edit(t, func(s map[string]any) {
			s["Status"].(map[string]any)["oneOf"] = []any{map[string]any{"type": "object"}}
		})
		node, err := exec.LookPath("node")
		testutil.NeedTool(t, err == nil, "node")
		cmd := exec.Command(node, filepath.Join("scripts", "gen-api-types.mjs"), "--stdout", "--spec", spec)
		cmd.Dir = filepath.Join(testutil.RepoRoot(), "pi-extension")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), `components.schemas.Status: the generator does not know the schema keyword "oneOf"`) {
			t.Errorf("want the generator to refuse oneOf at components.schemas.Status; got %v\n%s", err, out)
		}
	})
}
