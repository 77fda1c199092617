package notebook

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func notebookRev(rev int, reviewedTokens *int) State {
	return State{Revision: rev, Sections: secs("Task", "t"), EntryID: fmt.Sprintf("b%07d", rev), ReviewedTokens: reviewedTokens}
}

func TestStatusLineGolden(t *testing.T) {
	rev7 := notebookRev(7, intp(100000))
	afterCompaction := rev7
	afterCompaction.PrecedesCompaction = true
	tests := []struct {
		name string
		in   StatusInput
	}{
		{"no_notes_usage_unknown", StatusInput{}},
		{"no_notes_below_first_step", StatusInput{ContextTokens: intp(39999)}},
		{"no_notes_first_step", StatusInput{ContextTokens: intp(40000)}},
		{"no_notes_first_step_already_delivered", StatusInput{ContextTokens: intp(79999), DeliveredStep: 1}},
		{"no_notes_second_step", StatusInput{ContextTokens: intp(80000), DeliveredStep: 1}},
		{"notes_fresh", StatusInput{Notebook: rev7, ContextTokens: intp(139999)}},
		{"notes_stale_first_step", StatusInput{Notebook: rev7, ContextTokens: intp(140000)}},
		{"notes_stale_step_already_delivered", StatusInput{Notebook: rev7, ContextTokens: intp(170000), DeliveredStep: 1}},
		{"notes_stale_jump_delivers_one_line", StatusInput{Notebook: rev7, ContextTokens: intp(230000)}},
		{"notes_usage_fell_below_review", StatusInput{Notebook: rev7, ContextTokens: intp(20000)}},
		{"notes_usage_unknown", StatusInput{Notebook: rev7}},
		{"notes_older_record_never_stale_on_tokens", StatusInput{Notebook: notebookRev(3, nil), ContextTokens: intp(900000)}},
		{"notes_before_compaction_counts_from_window_start", StatusInput{Notebook: afterCompaction, ContextTokens: intp(52000), WindowStartTokens: intp(12000)}},
		{"notes_before_compaction_window_start_unknown", StatusInput{Notebook: afterCompaction, ContextTokens: intp(500000)}},
		{"notes_custom_step", StatusInput{Notebook: rev7, ContextTokens: intp(125000), StepTokens: 10000, DeliveredStep: 1}},
		{"branch_changed_with_notes", StatusInput{Notebook: rev7, ContextTokens: intp(100500), BranchChanged: true}},
		{"branch_changed_without_notes", StatusInput{ContextTokens: intp(1000), BranchChanged: true}},
		{"branch_changed_usage_unknown", StatusInput{Notebook: rev7, BranchChanged: true}},
		{"external_compaction_with_notes", StatusInput{Notebook: rev7, ContextTokens: intp(100500), ExternalCompaction: true}},
		{"external_compaction_without_notes", StatusInput{ExternalCompaction: true}},
		{"stale_with_both_facts", StatusInput{Notebook: rev7, ContextTokens: intp(150000), BranchChanged: true, ExternalCompaction: true}},
		{"no_notes_due_with_branch_changed", StatusInput{ContextTokens: intp(45000), BranchChanged: true}},
		{"suppressed_own_or_error_result", StatusInput{Notebook: rev7, ContextTokens: intp(400000), BranchChanged: true, Suppressed: true}},
	}
	figures := regexp.MustCompile(`[0-9]`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := StatusLine(tc.in)
			if got.Due != (got.Text != "") {
				t.Errorf("due %v with text %q", got.Due, got.Text)
			}
			if got.Due && !strings.HasPrefix(got.Text, StatusPrefix) {
				t.Errorf("text %q lacks the prefix", got.Text)
			}
			if rest := strings.Replace(got.Text, fmt.Sprintf("rev %d", tc.in.Notebook.Revision), "", 1); figures.MatchString(rest) {
				t.Errorf("text carries figures: %q", got.Text)
			}
			if strings.ContainsAny(got.Text, "\n\r") {
				t.Errorf("text is not one line: %q", got.Text)
			}
			checkGolden(t, filepath.Join("testdata", "golden", "status_"+tc.name+".txt"), renderStatusCase(tc.in, got))
		})
	}
}

func renderStatusCase(in StatusInput, out Status) string {
	num := func(p *int) string {
		if p == nil {
			return "unknown"
		}
		return fmt.Sprint(*p)
	}
	var b strings.Builder
	b.WriteString("input\n")
	if in.Notebook.Exists() {
		fmt.Fprintf(&b, "  notebook: rev %d (record %s), reviewedTokens %s, precedesCompaction %v\n",
			in.Notebook.Revision, in.Notebook.EntryID, num(in.Notebook.ReviewedTokens), in.Notebook.PrecedesCompaction)
	} else {
		b.WriteString("  notebook: none\n")
	}
	fmt.Fprintf(&b, "  contextTokens: %s\n  windowStartTokens: %s\n  stepTokens: %d\n  deliveredStep: %d\n",
		num(in.ContextTokens), num(in.WindowStartTokens), in.StepTokens, in.DeliveredStep)
	fmt.Fprintf(&b, "  branchChanged: %v\n  externalCompaction: %v\n  suppressed: %v\n", in.BranchChanged, in.ExternalCompaction, in.Suppressed)
	b.WriteString("output\n")
	fmt.Fprintf(&b, "  due: %v\n  step: %d\n  recordId: %q\n  delivers branchChanged: %v, externalCompaction: %v\n",
		out.Due, out.Step, out.RecordID, out.BranchChanged, out.ExternalCompaction)
	text := out.Text
	if text == "" {
		text = "(none)"
	}
	fmt.Fprintf(&b, "  text: %s\n", text)
	return b.String()
}

func checkGolden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./notebook -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (go test ./notebook -update rewrites it)\n--- want\n%s--- got\n%s", file, want, got)
	}
}

// Delivering each step once: a simulated sequence of tool results, with the
// caller recording what each line delivered, nudges once per step and is
// re-armed by a write.
func TestStatusStepsDeliveredOncePerRecord(t *testing.T) {
	p := mustWrite(t, chain(t), WriteRequest{Sections: secs("Task", "t"), ReviewedTokens: intp(10000)})
	delivered := map[string]int{}
	var lines []string
	run := func(usage int) {
		nb := Read(p)
		st := StatusLine(StatusInput{Notebook: nb, ContextTokens: intp(usage), DeliveredStep: delivered[nb.EntryID]})
		if st.Due {
			lines = append(lines, fmt.Sprintf("%d:%s", usage, st.Text))
			delivered[st.RecordID] = max(delivered[st.RecordID], st.Step)
		}
	}
	for _, u := range []int{20000, 49999, 50000, 60000, 30000, 55000, 90000, 95000} {
		run(u)
	}
	p = mustWrite(t, p, WriteRequest{Reviewed: true, ReviewedTokens: intp(95000)})
	for _, u := range []int{100000, 135000, 140000} {
		run(u)
	}
	want := []string{
		"50000:[note-context] notes rev 1" + statusStale,
		"90000:[note-context] notes rev 1" + statusStale,
		"135000:[note-context] notes rev 2" + statusStale,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestWindowStartTokensFromPath(t *testing.T) {
	s := loadJournal(t, filepath.Join("testdata", "branches.jsonl"))
	tests := []struct {
		leaf string
		want *int
	}{
		{leaf: "a000000a", want: intp(8100)}, // totalTokens 0: input + output
		{leaf: "d0000001"},                   // compaction with no reply after it yet
		{leaf: "a0000007"},                   // no compaction on the path
	}
	for _, tc := range tests {
		got := WindowStartTokens(s.path(t, tc.leaf))
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%s: %v, want %v", tc.leaf, got, tc.want)
		}
	}
	// End to end: the rev-3 notebook precedes the compaction, so staleness
	// counts from the window's first usage, not from its reviewedTokens.
	path := s.path(t, "a000000a")
	st := StatusLine(StatusInput{Notebook: Read(path), ContextTokens: intp(48100), WindowStartTokens: WindowStartTokens(path)})
	if !st.Due || st.Step != 1 || st.RecordID != "b0000003" {
		t.Fatalf("%+v", st)
	}
}
