package window

import (
	"strings"
	"testing"

	"github.com/pi-history/pi-history/rollover"
)

// TestRequestsAcceptEveryReasonAndNameThemWhenRefused: every known reason,
// emergency included, passes the checks of gate and compaction requests,
// and an unknown one is refused with a message naming each known one.
func TestRequestsAcceptEveryReasonAndNameThemWhenRefused(t *testing.T) {
	for _, r := range rollover.Reasons {
		pending := r
		if err := (&CompactionRequest{Reason: r}).check(); err != nil {
			t.Errorf("compaction reason %q refused: %v", r, err)
		}
		if err := (&GateRequest{Request: rollover.ReasonModel, Pending: &pending}).check(); err != nil {
			t.Errorf("gate pending %q refused: %v", r, err)
		}
	}
	err := (&CompactionRequest{Reason: "sideways"}).check()
	if err == nil {
		t.Fatal("an unknown reason was accepted")
	}
	for _, r := range rollover.Reasons {
		if !strings.Contains(err.Error(), string(r)) {
			t.Errorf("the refusal %q does not name %q", err, r)
		}
	}
}
