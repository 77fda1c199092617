package problem

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoOtherPackageWritesProblemDocuments: outside this package, no
// production Go file spells the problem media type or a problem type's
// URN as a string, so a route that answers with a problem document of its
// own (as webui and export once did) fails here instead of drifting from
// the API's.
func TestNoOtherPackageWritesProblemDocuments(t *testing.T) {
	root := filepath.Join("..", "..")
	here, _ := filepath.Abs(".")
	var offenders []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if abs, _ := filepath.Abs(path); abs == here || d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, lit := range []string{`"` + ContentType + `"`, `"urn:pi-history:problem:`} {
			if strings.Contains(string(b), lit) {
				offenders = append(offenders, path+" spells "+lit)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offenders {
		t.Errorf("%s: use package internal/problem's constants and Write instead", o)
	}
}
