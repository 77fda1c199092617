package problem

import (
	"strings"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
)

// TestNoOtherPackageWritesProblemDocuments: outside this package, no
// production Go file spells the problem media type or a problem type's
// URN as a string, so a route that answers with a problem document of its
// own (as webui and export once did) fails here instead of drifting from
// the API's.
func TestNoOtherPackageWritesProblemDocuments(t *testing.T) {
	var offenders []string
	testutil.ProductionGoFiles(t, func(rel string, src []byte) {
		if strings.HasPrefix(rel, "internal/problem/") {
			return
		}
		for _, lit := range []string{`"` + ContentType + `"`, `"urn:pi-history:problem:`} {
			if strings.Contains(string(src), lit) {
				offenders = append(offenders, rel+" spells "+lit)
			}
		}
	})
	for _, o := range offenders {
		t.Errorf("%s: use package internal/problem's constants and Write instead", o)
	}
}
