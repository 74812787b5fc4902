package run_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestStepwiseEndStateVars checks that the state a stepwise run ends with
// (the checkpoint RecordRun writes) holds the run's variables as a local
// run's last checkpoint does: the result's output, which may be the run's
// own vars map, adds "action" to the output only, never to the state.
func TestStepwiseEndStateVars(t *testing.T) {
	ctx := context.Background()
	local, remote := openStore(t), openStore(t)
	const file = "testdata/chain10/pipeline.toml"
	input := map[string]any{"topic": "t"}
	if _, err := prepare(t, file).Runner(run.Config{Store: local}).Start(ctx, run.Input{ID: "task-1", Execution: "exec-1", Input: input}); err != nil {
		t.Fatal(err)
	}
	stp := prepare(t, file).NewStepper(run.Config{}, remote)
	p, err := stp.Begin(ctx, run.Input{ID: "task-1", Execution: "exec-1", Input: input}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p, _ = driveStepwise(t, stp, p)
	c, err := local.LatestCheckpoint(ctx, "task-1", "exec-1")
	if err != nil {
		t.Fatal(err)
	}
	want, got := stateVars(t, c.State), stateVars(t, p.Snapshot.State)
	if _, ok := got["action"]; ok || !reflect.DeepEqual(got, want) {
		t.Errorf("stepwise end state vars = %v, want the local run's %v", got, want)
	}
	if p.Result.Output["action"] != "none" {
		t.Errorf("result output action = %v, want none", p.Result.Output["action"])
	}
}

// stateVars is the run's variables in an encoded state.
func stateVars(t *testing.T, state []byte) map[string]any {
	t.Helper()
	var st struct {
		Nav struct {
			Env struct {
				Vars map[string]any `json:"vars"`
			} `json:"env"`
		} `json:"nav"`
	}
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatal(err)
	}
	return st.Nav.Env.Vars
}

// driveStepwise runs the stepwise run p began to its end, every step and
// outcome through JSON as a scheduler carries them: its last progress,
// and the spans of every call.
func driveStepwise(t *testing.T, stp *run.Stepper, p *run.Progress) (*run.Progress, []store.Span) {
	t.Helper()
	ctx := context.Background()
	spans := p.Spans
	for !p.Ended() {
		if len(p.Batch) == 0 {
			t.Fatalf("the run waits: %+v", p.Result)
		}
		var outs []run.StepOutcome
		for _, tok := range p.Batch {
			o, err := stp.RunStep(ctx, roundTrip(t, p.Snapshot), tok.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, roundTrip(t, *o))
		}
		var err error
		if p, err = stp.Advance(ctx, roundTrip(t, p.Snapshot), outs, nil, nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		spans = append(spans, p.Spans...)
	}
	return p, spans
}
