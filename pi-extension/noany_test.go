package piextension_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
)

// anyType finds `any` used as a type in TypeScript code.
var anyType = regexp.MustCompile(`(:\s*any\b|\bas any\b|<any\b|\bany\[\]|\bany\s*[>,)|]|\|\s*any\b)`)

// TestExtensionHasNoAny keeps `any` out of the extension's sources: every
// value has a type (Pi's, the generated API types, or the extension's own),
// and one that is really unknown is `unknown`, narrowed where it is read.
func TestExtensionHasNoAny(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "pi-extension")
	files, err := filepath.Glob(filepath.Join(dir, "*.ts"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no TypeScript in %s: %v", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "//") || strings.HasPrefix(line, "*") || strings.HasPrefix(line, "/*") {
				continue
			}
			if m := anyType.FindString(line); m != "" {
				t.Errorf("%s:%d: %q uses any; give it a type (or unknown, narrowed where it is read)", filepath.Base(f), n, m)
			}
		}
		if err := sc.Err(); err != nil {
			t.Errorf("%s: %v (the lines after it were not checked)", filepath.Base(f), err)
		}
	}
}
