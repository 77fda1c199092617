// Package rollover decides whether a new context window may start in a Pi
// session and writes the summary that opens it, without any LLM.
//
// It is a client with no storage of its own except the ledger file: every
// decision is a pure function of the active branch (journal entries, root
// first, with Raw populated), the notebook on that branch (notebook.State,
// nil when there is none), the user's compaction settings and this package's
// Config. Package window reads those inputs from the store and keeps the
// per-session state between decisions; package api serves its answers to the
// Pi extension, which applies them.
//
// The package has five parts:
//
//   - A port of the parts of Pi 0.73.1 that choose and size a compaction
//     (pi.go, jsjson.go): EstimateTokens, FindCutPoint, BuildContext,
//     EstimateContextTokens and PrepareCut. The reclaim a gate projects is
//     only useful if it is the number Pi's compaction will produce, so these
//     follow Pi's JavaScript line by line, down to counting UTF-16 code units
//     and the length of JSON.stringify output. testdata/picheck runs Pi's own
//     exported functions under Node and the tests compare the two.
//   - The gate (gate.go): the structural checks of docs/spec-notes.md, "The gate" with their
//     blocker texts, the model/user/host attribution and the rules for
//     confirming a pending host schedule (docs/spec-notes.md, "Host-initiated rollover").
//   - The rollover summary (summary.go, extract.go): the deterministic
//     template of docs/spec-notes.md, "The rollover summary", with the notebook verbatim, the index of earlier user
//     messages built by mechanical extraction rules, and the pinned user
//     messages of the part that leaves the window.
//   - Maintenance (maintenance.go): the once-per-window reminder and the
//     fallback state machine of docs/spec-notes.md, "Reminder and fallback", "Implementation notes", "Host-initiated rollover", as decisions the extension
//     asks for on each event.
//   - The ledger and configuration (ledger.go, config.go) of docs/spec-notes.md, "The ledger", "Configuration", "Budget scale".
//
// Window numbers follow package journal: every compaction on the path starts
// a new window, so the wN of the index and the window a history call takes
// are the same number.
package rollover
