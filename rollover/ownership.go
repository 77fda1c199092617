package rollover

import "errors"

// BeforeCompactInput is what the extension knows in session_before_compact
// (or when it builds boundary entries): the rollover input with Pi's actual
// cut, plus who started the compaction.
type BeforeCompactInput struct {
	RolloverInput
	// CustomInstructions is set when the user ran /compact with
	// instructions: Pi's LLM summary runs (docs/spec-notes.md, "Compaction ownership").
	CustomInstructions string
	// Model is the current model "provider/id", checked against
	// Config.ExternalCompactionModels.
	Model string
	// Ours is true when this plugin scheduled the compaction (a model, user,
	// host or fallback rollover); false for Pi's own threshold, overflow or
	// manual compaction.
	Ours bool
	// MidRun is true for Pi's threshold compaction before the next assistant
	// response inside an active run.
	MidRun bool
}

// Declines: stable ledger categories for a compaction left to Pi or to
// another extension.
const (
	DeclineDisabled           = "disabled" // the configuration's enabled is false
	DeclineCustomInstructions = "custom_instructions"
	DeclineExternalOwner      = "external_owner"
	DeclineMidRun             = "auto_compaction_mid_run"
	DeclineStaleAtThreshold   = "stale_notebook_at_threshold"
	DeclineStaleAtCut         = "stale_notebook_at_cut"
	DeclineNoNotebook         = "no_notebook"
	DeclineNothingToDrop      = "nothing_to_drop"
	DeclineBadCut             = "cut_not_on_branch"
	DeclineEmergencyOff       = "emergency_rollover_off" // emergencyRollover is false: Pi's summary recovers from the overflow
)

// CompactDecision says whether this plugin supplies the compaction. When
// Compaction is nil the extension returns undefined and Pi (or the owning
// extension) writes the summary; Declined names why.
type CompactDecision struct {
	Compaction *Compaction `json:"compaction,omitempty"`
	Declined   string      `json:"declined,omitempty"`
}

// BeforeCompact decides a compaction: ownership first (docs/spec-notes.md, "Compaction ownership": custom
// instructions, then an external owner), then the mid-run rule (docs/spec-notes.md, "Implementation notes"), then
// the rollover checks at the actual cut, with the freshness decline named
// after the trigger.
func BeforeCompact(in BeforeCompactInput) CompactDecision {
	if !in.Config.Enabled {
		return CompactDecision{Declined: DeclineDisabled}
	}
	if in.CustomInstructions != "" {
		return CompactDecision{Declined: DeclineCustomInstructions}
	}
	if in.Config.ExternalOwner(in.Model) {
		return CompactDecision{Declined: DeclineExternalOwner}
	}
	if in.Reason == ReasonEmergency {
		return emergencyDecision(in)
	}
	if in.MidRun && !in.Ours {
		return CompactDecision{Declined: DeclineMidRun}
	}
	if !in.Ours {
		in.Reason = ReasonThreshold
	}
	c, err := Rollover(in.RolloverInput)
	if err == nil {
		return CompactDecision{Compaction: &c}
	}
	var r *Refusal
	switch {
	case errors.As(err, &r) && r.Blocker == BlockStaleNotebook:
		if in.Ours {
			return CompactDecision{Declined: DeclineStaleAtCut}
		}
		return CompactDecision{Declined: DeclineStaleAtThreshold}
	case errors.As(err, &r) && r.Blocker == BlockNoNotebook:
		return CompactDecision{Declined: DeclineNoNotebook}
	case errors.Is(err, ErrCutNotOnBranch):
		return CompactDecision{Declined: DeclineBadCut}
	default:
		return CompactDecision{Declined: DeclineNothingToDrop}
	}
}

// emergencyDecision is BeforeCompact for Pi's context overflow: the
// Emergency Rollover unless the configuration turns it off.
func emergencyDecision(in BeforeCompactInput) CompactDecision {
	if !in.Config.EmergencyRollover {
		return CompactDecision{Declined: DeclineEmergencyOff}
	}
	c, err := Emergency(in.RolloverInput)
	if err == nil {
		return CompactDecision{Compaction: &c}
	}
	if errors.Is(err, ErrCutNotOnBranch) {
		return CompactDecision{Declined: DeclineBadCut}
	}
	return CompactDecision{Declined: DeclineNothingToDrop}
}
