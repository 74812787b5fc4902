package evolve

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// TestRoundText: a round prints the baseline's replays, then the
// candidates' table (effect, interval, the first failing gate's reason)
// with the mutators that proposed nothing on the side; a round without
// candidates says why each mutator proposed nothing, where the table
// would be.
func TestRoundText(t *testing.T) {
	base := baseline()
	good := evaluate(t, base, revise(t, base, "greedy", map[string]float64{"autonomy_level": 0.8}), "greedy", improving, false)
	bad := evaluate(t, base, revise(t, base, "exploratory", map[string]float64{"autonomy_level": 0.6}), "exploratory", regressed, false)
	j := &Judgment{Tasks: 200, Self: SelfReplays{Counted: 198, Reproduced: 198, Skipped: 2}, Reasons: []string{"fidelity 100.0%"}}
	r := &RoundResult{Baseline: j, Candidates: []Evaluated{good, bad}, Rejected: []Rejection{{Mutator: "curate", Err: errors.New("no failed replays")}}}
	var out, diag bytes.Buffer
	if !r.WriteText(&out, &diag, base, MetricSuccessRate) {
		t.Fatal("a round with candidates says it has none")
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for i, want := range []string{
		"baseline 2.0.0: 200 tasks replayed, fidelity 100.0% (2 self-replays skipped: a call had no recording)",
		"  fidelity 100.0%",
		"MUTATOR      CANDIDATE  ID",
		"exploratory  2.1.0      " + bad.ID(),
		"greedy       2.1.0      " + good.ID(),
	} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) {
			t.Fatalf("line %d: want prefix %q in\n%s", i+1, want, out.String())
		}
	}
	if !strings.Contains(lines[3], "-0.150") || !strings.Contains(lines[3], "fail") || !strings.Contains(lines[3], GateNoRegression+": ") {
		t.Errorf("the regressing candidate's row lacks its effect, ruling or failing gate: %q", lines[3])
	}
	if !strings.Contains(lines[4], "+0.150") || !strings.Contains(lines[4], "pass") {
		t.Errorf("the improving candidate's row lacks its effect or ruling: %q", lines[4])
	}
	if diag.String() != "curate proposed nothing: no failed replays\n" {
		t.Errorf("diagnostics %q", diag.String())
	}

	out.Reset()
	diag.Reset()
	r.Candidates = nil
	if r.WriteText(&out, &diag, base, MetricSuccessRate) {
		t.Fatal("a round without candidates says it has some")
	}
	if !strings.HasSuffix(out.String(), "no mutator proposed a candidate:\n  curate: no failed replays\n") || diag.Len() != 0 {
		t.Errorf("no candidates: stdout %q, diagnostics %q", out.String(), diag.String())
	}
}

// TestSettledText: what a settlement and a dry run say, in each case.
func TestSettledText(t *testing.T) {
	base := baseline()
	good := evaluate(t, base, revise(t, base, "greedy", map[string]float64{"autonomy_level": 0.8}), "greedy", improving, false)
	for _, tc := range []struct {
		s    Settlement
		want string
	}{
		{Settlement{Winner: &good, Path: "strategies/email-handler-2.1.0.toml"}, "promoted email-handler 2.1.0 (greedy) → strategies/email-handler-2.1.0.toml\n"},
		{Settlement{Reviews: []ReviewRequest{{ID: "abc", Mutator: "curate"}}}, "awaiting review: abc (curate) — sextant review show abc --store x\n"},
		{Settlement{}, "none passed\n"},
	} {
		var b bytes.Buffer
		tc.s.WriteText(&b, " --store x", "none passed")
		if b.String() != tc.want {
			t.Errorf("got %q, want %q", b.String(), tc.want)
		}
	}
	var b bytes.Buffer
	WriteDryRun(&b, []Evaluated{good}, MetricSuccessRate, "none passed")
	WriteDryRun(&b, nil, MetricSuccessRate, "none passed")
	if want := "dry run: would promote 2.1.0 " + good.ID() + " (greedy)\ndry run: none passed\n"; b.String() != want {
		t.Errorf("dry runs: %q, want %q", b.String(), want)
	}
}

// TestEpochText: an epoch's line, with and without operations and a
// candidate; and the note of a resumed evolution.
func TestEpochText(t *testing.T) {
	base := baseline()
	good := evaluate(t, base, revise(t, base, "curate", map[string]float64{"autonomy_level": 0.8}), "curate", improving, false)
	var b bytes.Buffer
	Epoch{N: 1, Rate: 0.5}.WriteText(&b, 3, MetricSuccessRate)
	Epoch{N: 2, Rate: 0.75, Ops: []strategy.Delta{{Op: strategy.OpAdd}}, Candidate: &good}.WriteText(&b, 3, MetricSuccessRate)
	want := "epoch 1/3: success_rate 0.500; nothing to change\n" +
		"epoch 2/3: success_rate 0.750; " + OpCounts([]strategy.Delta{{Op: strategy.OpAdd}}) + " → candidate 2.1.0 " + good.ID() + " +0.150 " + string(sdk.Pass) + "\n"
	if b.String() != want {
		t.Errorf("epochs:\n%q\nwant\n%q", b.String(), want)
	}
	if got := ResumingNote(2); got != "resuming at epoch 2 (epoch 1 checkpointed)" {
		t.Errorf("ResumingNote(2) = %q", got)
	}
	if got := ResumingNote(4); got != "resuming at epoch 4 (epochs 1–3 checkpointed)" {
		t.Errorf("ResumingNote(4) = %q", got)
	}
}
