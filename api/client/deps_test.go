package client

import (
	"go/build"
	"os/exec"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/pi-history/pi-history"

// TestClientImportsOnlyTheRootPackage: a program that talks to a running
// server links the client, the root package's words and the standard
// library, nothing of the server (Pebble, Bleve, the store, search). The
// direct imports are read with go/build; the whole graph, when the go
// command is at hand, with go list -deps.
func TestClientImportsOnlyTheRootPackage(t *testing.T) {
	for _, dir := range []string{".", "../.."} {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			if strings.Contains(imp, ".") && imp != module {
				t.Errorf("%s imports %s: the client may import only %s and the standard library", pkg.Name, imp, module)
			}
		}
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the whole import graph")
	}
	out, err := exec.Command(gocmd, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != module && p != module+"/api/client" {
			t.Errorf("the client links %s; it may link only %s and the standard library", p, module)
		}
	}
}
