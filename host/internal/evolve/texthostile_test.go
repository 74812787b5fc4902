package evolve

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/sdk"
)

// TestTextHostile: a mutator's name, a version, a gate's reason, a
// mutator's error, a review's id and a move's reason come from a model, a
// plugin or the store; every text writer here shows their control
// characters escaped (report.TermSafe), so none is obeyed by the
// terminal, and a table's columns still line up.
func TestTextHostile(t *testing.T) {
	const osc, csi = "\x1b]0;pwned\x07", "\u009b2J"
	const escOSC, escCSI = `\x1b]0;pwned\x07`, `\u009b2J`
	check := func(writer, out string, wants ...string) {
		t.Helper()
		if strings.Contains(out, "\x1b") || strings.ContainsAny(out, "\x07\x7f\u009b") {
			t.Errorf("%s writes a control character as it is:\n%q", writer, out)
		}
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("%s: %q not shown escaped:\n%s", writer, want, out)
			}
		}
	}
	base := baseline()
	good := evaluate(t, base, revise(t, base, "greedy", map[string]float64{"autonomy_level": 0.8}), "greedy", improving, false)
	bad := evaluate(t, base, revise(t, base, "exploratory", map[string]float64{"autonomy_level": 0.6}), "exploratory", regressed, false)
	good.Mutator = "greedy" + osc
	bad.Strategy.Metadata.Version = "2.1.0" + csi
	for i, g := range bad.Result.Gates {
		if g.Ruling != sdk.Pass {
			bad.Result.Gates[i].Reasons = []string{"reason " + osc}
			break
		}
	}
	var out, diag bytes.Buffer
	j := &Judgment{Tasks: 2, Reasons: []string{"judged " + csi}}
	r := &RoundResult{Baseline: j, Candidates: []Evaluated{good, bad}, Rejected: []Rejection{{Mutator: "curate", Err: errors.New("error " + osc)}}}
	r.WriteText(&out, &diag, base, MetricSuccessRate)
	check("RoundResult.WriteText", out.String(), "judged "+escCSI, "greedy"+escOSC, "2.1.0"+escCSI, "reason "+escOSC)
	check("RoundResult.WriteText's diagnostics", diag.String(), "error "+escOSC)
	lines := strings.Split(out.String(), "\n")
	if i, k := strings.Index(lines[2], " ID ")+1, strings.Index(lines[3], bad.ID()); i <= 0 || i != k {
		t.Errorf("the escaped cells shift the table's columns:\n%s", out.String())
	}
	out.Reset()
	r.Candidates = nil
	r.WriteText(&out, &diag, base, MetricSuccessRate)
	check("RoundResult.WriteText without candidates", out.String(), "error "+escOSC)

	out.Reset()
	WriteDryRun(&out, []Evaluated{good}, MetricSuccessRate, "none")
	WriteDryRun(&out, nil, MetricSuccessRate, "none "+csi)
	check("WriteDryRun", out.String(), "greedy"+escOSC, "none "+escCSI)

	out.Reset()
	(&Settlement{Winner: &good, Path: "p" + csi}).WriteText(&out, "", "none")
	(&Settlement{Reviews: []ReviewRequest{{ID: "id" + osc, Mutator: "m" + csi}}}).WriteText(&out, "", "none")
	check("Settlement.WriteText", out.String(), "greedy"+escOSC, "p"+escCSI, "id"+escOSC, "m"+escCSI)

	out.Reset()
	Epoch{N: 1, Rate: 0.5, Candidate: &bad}.WriteText(&out, 1, MetricSuccessRate)
	check("Epoch.WriteText", out.String(), "2.1.0"+escCSI)

	out.Reset()
	if err := WriteReviews(&out, []ReviewRequest{{ID: "id" + osc, Mutator: "m" + csi}}); err != nil {
		t.Fatal(err)
	}
	WriteDecision(&out, &ReviewRequest{ID: "id" + osc, Status: ReviewApproved})
	check("WriteReviews and WriteDecision", out.String(), "id"+escOSC, "m"+escCSI)

	out.Reset()
	p := &pipeline.Pipeline{Name: "triage", File: "pipeline.toml"}
	v1 := LiveVersion{Name: "s", Version: "1.0.0", Action: MoveConfigured}
	v2 := LiveVersion{Name: "s", Version: "2.0.0" + csi, Action: MovePromote, By: "ann" + osc, Reason: "because " + osc, At: time.Unix(0, 0), From: "1.0.0"}
	l := &Live{Pipeline: "triage", Live: v2, Configured: v1, Runs: v1, Pinned: true, History: []LiveVersion{v2}}
	if err := l.WriteText(&out, p); err != nil {
		t.Fatal(err)
	}
	l.WriteMoved(&out, &Live{Live: v1}, p)
	check("Live.WriteText and WriteMoved", out.String(), "2.0.0"+escCSI, "ann"+escOSC, "because "+escOSC)

	out.Reset()
	if err := WriteStrategyLog(context.Background(), &out, nil, "s"+osc, nil); err != nil {
		t.Fatal(err)
	}
	(&Online{Out: &out}).say("learned %s\n", "s"+csi)
	check("WriteStrategyLog and Online's lines", out.String(), "s"+escOSC, "s"+escCSI)
}
