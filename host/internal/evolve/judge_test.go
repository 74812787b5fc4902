package evolve

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/sdk"
)

// TestJudgeSkippedSelfReplays: self-replays skipped by on_miss = "skip" are
// left out of the fidelity (and counted), as they are out of the pairs.
func TestJudgeSkippedSelfReplays(t *testing.T) {
	base := baseline()
	cand := candidate(base, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), map[string]float64{"user_confirmation": 0.55})
	var results []replay.Result
	for i := range 10 {
		id := fmt.Sprintf("t%02d", i)
		skipped := i < 3
		results = append(results,
			replay.Result{Task: id, Hash: base.Hash(), SelfReplay: true, Reproduced: !skipped, Skipped: skipped,
				Divergence: map[bool]*replay.Divergence{true: {Node: "classify", Expected: "call a", Got: "call b"}}[skipped],
				Outcome:    sdk.TaskResult{Success: true}},
			replay.Result{Task: id, Hash: cand.Hash(), Skipped: skipped, Outcome: sdk.TaskResult{Success: true}})
	}
	min := GateSpec{Name: "min-fidelity", Gate: mustBuiltin(t, GateMinFidelity), Config: map[string]any{"min": 1.0}}
	j := Judge(context.Background(), results, base, cand, []GateSpec{min}, Options{Seed: 1})
	if j.Self.Counted != 7 || j.Self.Skipped != 3 || j.Self.Fidelity() != 1 || len(j.Self.Divergences) != 0 {
		t.Fatalf("self-replays %+v, fidelity %v", j.Self, j.Self.Fidelity())
	}
	if len(j.Comparison.Tasks) != 7 || j.Ruling != sdk.Pass || j.ExitCode() != ExitPass || j.Tasks != 10 {
		t.Fatalf("pairs %d, ruling %s, tasks %d", len(j.Comparison.Tasks), j.Ruling, j.Tasks)
	}
	if r := j.Report("p"); r.Fidelity != 1 || r.Skipped != 3 || r.ExitCode != 0 {
		t.Fatalf("report %+v", r)
	}
}

// TestJudgeDivergenceFails: a counted self-replay that diverged fails the
// verdict whatever the gates say; with no counted self-replay the fidelity
// is 0 (min-fidelity fails closed).
func TestJudgeDivergenceFails(t *testing.T) {
	base := baseline()
	results := []replay.Result{
		{Task: "a", Hash: base.Hash(), SelfReplay: true, Reproduced: true},
		{Task: "b", Hash: base.Hash(), SelfReplay: true, Divergence: &replay.Divergence{Node: "n", Expected: "x", Got: "y"}},
	}
	j := Judge(context.Background(), results, base, nil, nil, Options{})
	if j.Ruling != sdk.Fail || j.ExitCode() != ExitFail || j.Self.Fidelity() != 0.5 || len(j.Self.Divergences) != 1 {
		t.Fatalf("%+v", j)
	}
	if j := Judge(context.Background(), []replay.Result{{Task: "a", Hash: base.Hash(), SelfReplay: true, Skipped: true}}, base, nil, nil, Options{}); j.Self.Fidelity() != 0 {
		t.Fatalf("fidelity with no counted self-replay: %v", j.Self.Fidelity())
	}
}

// TestPairSameStrategy: gating the baseline against itself pairs every task
// with itself.
func TestPairSameStrategy(t *testing.T) {
	base := baseline()
	results := []replay.Result{{Task: "a", Hash: base.Hash(), Outcome: sdk.TaskResult{Success: true}}, {Task: "a", Hash: base.Hash(), Outcome: sdk.TaskResult{Success: true}}}
	if got := Pair(results, base, base); len(got) != 1 || !got[0].Baseline.Success || !got[0].Candidate.Success {
		t.Fatalf("pairs %+v", got)
	}
}

func mustBuiltin(t *testing.T, name string) sdk.Gate {
	t.Helper()
	g, err := Builtin(name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestJudgeMinFidelity: the verdict fails when the fidelity is below
// min_fidelity, naming the first divergences of the first unfaithful
// tasks; at or above it, the divergences are reported and the verdict
// stands; without a counted self-replay the reason says why.
func TestJudgeMinFidelity(t *testing.T) {
	base := baseline()
	var results []replay.Result
	for i := range 10 {
		r := replay.Result{Task: fmt.Sprintf("t%02d", i), Hash: base.Hash(), SelfReplay: true, Reproduced: i >= 4}
		if i < 4 {
			r.Divergence = &replay.Divergence{Node: "classify", Expected: "call e3e3396a2a13", Got: fmt.Sprintf("call\n%d", i)}
		}
		results = append(results, r)
	}
	at := func(m float64) *float64 { return &m }
	for _, tc := range []struct {
		name    string
		min     *float64
		ruling  sdk.Ruling
		reasons []string
	}{
		{"default is every self-replay", nil, sdk.Fail, []string{
			"fidelity 60.0% is below min_fidelity 100.0%: 4 of 10 self-replays left their recorded trace",
			"task t00 at step classify: expected call e3e3396a2a13, got call 0",
			"task t01 at step classify: expected call e3e3396a2a13, got call 1",
			"task t02 at step classify: expected call e3e3396a2a13, got call 2",
			"… and 1 more",
		}},
		{"below", at(0.7), sdk.Fail, []string{
			"fidelity 60.0% is below min_fidelity 70.0%: 4 of 10 self-replays left their recorded trace",
			"task t00 at step classify: expected call e3e3396a2a13, got call 0",
			"task t01 at step classify: expected call e3e3396a2a13, got call 1",
			"task t02 at step classify: expected call e3e3396a2a13, got call 2",
			"… and 1 more",
		}},
		{"at", at(0.6), sdk.Pass, []string{
			"fidelity 60.0% meets min_fidelity 60.0%: 4 of 10 self-replays left their recorded trace",
			"task t00 at step classify: expected call e3e3396a2a13, got call 0",
			"task t01 at step classify: expected call e3e3396a2a13, got call 1",
			"task t02 at step classify: expected call e3e3396a2a13, got call 2",
			"… and 1 more",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := Judge(context.Background(), results, base, nil, nil, Options{MinFidelity: tc.min})
			if j.Ruling != tc.ruling || fmt.Sprint(j.Reasons) != fmt.Sprint(tc.reasons) {
				t.Fatalf("ruling %s, reasons\n%q\nwant %s\n%q", j.Ruling, j.Reasons, tc.ruling, tc.reasons)
			}
			r := j.Report("p")
			if fmt.Sprint(r.Reasons) != fmt.Sprint(tc.reasons) || r.SelfReplays != 10 || r.ExitCode != ExitCode(tc.ruling) {
				t.Fatalf("report %+v", r)
			}
		})
	}
	t.Run("no self-replay", func(t *testing.T) {
		other := []replay.Result{{Task: "a", Hash: base.Hash()}, {Task: "b", Hash: base.Hash()}}
		j := Judge(context.Background(), other, base, nil, nil, Options{})
		want := fmt.Sprintf("no self-replay counted: none of the 2 tasks was recorded under %s %s (hash %s…), so fidelity not measured",
			base.Metadata.Name, base.Metadata.Version, base.Hash()[:12])
		if j.Ruling != sdk.Pass || len(j.Reasons) != 1 || j.Reasons[0] != want {
			t.Fatalf("ruling %s, reasons %q\nwant %q", j.Ruling, j.Reasons, want)
		}
	})
}
