package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// chain10Vars checks a completed chain10 run's variables: each LLM
// step's text under its node and its output's name, the expressions'
// values, the JSON step's object.
func chain10Vars(t *testing.T, res *run.Result) {
	t.Helper()
	for _, n := range []string{"1", "3", "5", "7"} {
		if want := "answer " + n; res.Output["s"+n] != want || res.Output["a"+n] != want {
			t.Fatalf("s%s = %v, a%s = %v; want %q", n, res.Output["s"+n], n, res.Output["a"+n], want)
		}
	}
	if v, ok := res.Output["verdict"].(map[string]any); !ok || v["ok"] != true || res.Output["n8"] != 8.0 && res.Output["n8"] != 8 ||
		res.Output["done"] != true {
		t.Fatalf("vars %v", res.Output)
	}
}

// TestRunMapsReused: runs that Start makes give back the maps they take
// from pools: their LLM steps' text output maps as the steps are handed
// over, under a navigator that never reads outputs (the chain's), their
// Done map and their chat Vars once they return; later steps and runs
// fill them again, and every run, several at once, still ends with its
// own values.
func TestRunMapsReused(t *testing.T) {
	made, restore := run.CountPoolMaps()
	defer restore()
	prep := prepare(t, "testdata/chain10/pipeline.toml")
	r := prep.Runner(run.Config{Store: openStore(t)})
	const goroutines, runs = 4, 10
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range runs {
				res, err := r.Start(context.Background(), run.Input{Input: map[string]any{"topic": fmt.Sprint(g, i)}})
				if err != nil || res.Status != store.StatusCompleted {
					t.Errorf("run: %v %+v", err, res)
					return
				}
				chain10Vars(t, res)
			}
		})
	}
	wg.Wait()
	// Without reuse, a run makes 4 text output maps, a Done map and a
	// chat Vars map of its own; the race detector's pools drop a quarter
	// of what they are given back.
	n := made()
	for i, want := range []int64{4, 1, 1} {
		if n[i] >= want*goroutines*runs/2 {
			t.Errorf("%d runs made %v maps (text outputs, Done, chat Vars)", goroutines*runs, n)
		}
	}
}

// blindFault is the chain navigator, which never reads outputs, raising
// a fault once after step node.
type blindFault struct {
	sdk.Navigator
	node    string
	faulted bool
}

func (*blindFault) OutputBlind() bool { return true }

func (b *blindFault) Next(ctx context.Context, req *sdk.NextRequest) (*sdk.Decision, error) {
	for _, t := range req.State.Tokens {
		if t.ID == req.Token && t.Node == b.node && !b.faulted {
			b.faulted = true
			return &sdk.Decision{Fault: &sdk.Fault{Node: b.node, Message: "no way out"}}, nil
		}
	}
	return b.Navigator.Next(ctx, req)
}

// TestTextOutputKeptByIncident: an LLM step's text output that an
// incident keeps (its navigator call failed) is not given back: the
// incident's checkpoint holds it, and a retry hands it over again.
func TestTextOutputKeptByIncident(t *testing.T) {
	prep := prepare(t, "testdata/chain10/pipeline.toml")
	st := openStore(t)
	cfg := run.Config{Pipeline: prep.Pipeline, Navigator: &blindFault{Navigator: prep.Navigator, node: "s3"}, Routine: prep.Routine,
		Strategy: prep.Strategy, Providers: prep.Providers, Prices: prep.Prices, Store: st}
	ctx := context.Background()
	res, err := run.NewRunner(cfg).Start(ctx, run.Input{Input: map[string]any{"topic": "cats"}})
	if err != nil || res.Status != store.StatusIncident {
		t.Fatalf("run: %v %+v", err, res)
	}
	// Later runs reuse what was given back, and must not touch the kept map.
	for i := range 3 {
		if res, err := prep.Runner(run.Config{Store: st}).Start(ctx, run.Input{Input: map[string]any{"topic": fmt.Sprint(i)}}); err != nil {
			t.Fatalf("run: %v %+v", err, res)
		}
	}
	tree, err := st.Tree(ctx, res.Task)
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Done map[string]struct {
			Outcome sdk.Outcome `json:"outcome"`
		} `json:"done"`
	}
	last := tree.Executions[len(tree.Executions)-1]
	if err := json.Unmarshal(last.Checkpoint.State, &state); err != nil {
		t.Fatal(err)
	}
	if len(state.Done) != 1 {
		t.Fatalf("the incident kept %d outcomes: %s", len(state.Done), last.Checkpoint.State)
	}
	for _, d := range state.Done {
		if d.Outcome.Output["value"] != "answer 3" {
			t.Fatalf("the kept outcome is %v", d.Outcome.Output)
		}
	}
	res, err = run.NewRunner(cfg).Retry(ctx, res.Task, nil)
	if err != nil || res.Status != store.StatusCompleted {
		t.Fatalf("retry: %v %+v", err, res)
	}
	chain10Vars(t, res)
}
