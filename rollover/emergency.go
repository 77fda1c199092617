package rollover

import (
	"errors"

	"github.com/pi-history/pi-history/journal"
)

// The Emergency Rollover (seed B): Pi's context overflowed (the provider
// refused the request as too long, or cut a response short), and Pi
// compacts to recover. Preparing a fresh Handoff would need one more
// request on the oversized context, so none is attempted: the template is
// written at once from what is saved (the notebook, and the last saved
// Handoff marked stale, or a line saying there is none), at Pi's own cut,
// which keeps Pi's keepRecentTokens of recent history, the Tail setting
// notwithstanding. Neither a missing notebook nor a stale one declines it:
// Pi's own summary, the alternative, is that oversized request.

const emergencyNotice = "Emergency rollover: the context overflowed before a Handoff could be prepared. The notebook and the Handoff below were saved before that and may be stale; recover recent work with `history`.\n"

const emergencyClosingInstruction = "Before continuing, check the stale Handoff and the notebook's Next against the recent messages below and `history`: read the entries of the last steps rather than assuming they happened as planned.\n"

// LastHandoff is the newest Handoff on path, in whichever window it was
// written.
func LastHandoff(path []*journal.Entry) (Handoff, bool) {
	for i := len(path) - 1; i >= 0; i-- {
		if h, ok := handoffOf(path[i]); ok {
			return h, true
		}
	}
	return Handoff{}, false
}

// Emergency writes the Emergency Rollover's compaction at Pi's cut
// (in.FirstKeptEntryID, or the projection with Pi's keepRecentTokens).
// It fails only when there is nothing to drop or the cut is not on the
// branch.
func Emergency(in RolloverInput) (Compaction, error) {
	pi := in.Pi
	pi.TailTokens = nil // Pi's keepRecentTokens, never the Tail
	p, err := makePlan(in.Path, in.FirstKeptEntryID, pi)
	if errors.Is(err, ErrNothingToCompact) {
		return Compaction{}, refuse(BlockNothingToDrop)
	}
	if err != nil {
		return Compaction{}, err
	}
	if p.lastDropped < 0 {
		return Compaction{}, refuse(BlockNothingToDrop)
	}
	nb := in.Notebook
	if !notebookOnBranch(in.Path, nb) {
		nb = nil
	}
	return compose(in.Path, p, nb, ReasonEmergency, in.Config), nil
}
