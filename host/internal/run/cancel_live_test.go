package run_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestCancelLive: a run in progress in this process is cancelled through
// Cancel, which waits for it to end; while it runs, a second run of the
// same task is refused, and once it has ended the task is no longer
// running and a second Cancel finds it ended.
func TestCancelLive(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/chain10/pipeline.toml")
	st := openStore(t)
	p, _ := prep.Providers.Get("default")
	g := newGate(p.Plugin)
	t.Cleanup(g.open)
	gated := *p
	gated.Plugin = g
	r := run.NewRunner(run.Config{Pipeline: prep.Pipeline, Navigator: prep.Navigator, Routine: prep.Routine, Strategy: prep.Strategy,
		Prices: prep.Prices, Store: st, Providers: run.NewProviders(nil, &gated)})
	end := make(chan ended, 1)
	go func() {
		res, err := r.Start(ctx, run.Input{ID: "live", Input: map[string]any{"topic": "x"}})
		end <- ended{res, err}
	}()
	select {
	case <-g.started:
	case e := <-end:
		t.Fatalf("the run ended before its first call: %v %+v", e.err, e.res)
	}
	if !run.Running("live") {
		t.Fatal("a run in progress is not running")
	}
	if _, err := r.Start(ctx, run.Input{ID: "live", Input: map[string]any{"topic": "x"}}); !errors.Is(err, store.ErrOwned) {
		t.Fatalf("a second run of a running task: %v, want ErrOwned", err)
	}
	res, err := run.Cancel(ctx, st, "live", &run.Cancelled{By: "ann@test", Reason: "stale"})
	if err != nil || res.Status != store.StatusCancelled {
		t.Fatalf("cancel a live run: %v %+v", err, res)
	}
	// Cancel returned once the run had ended: its Start has returned.
	e := <-end
	if e.err != nil || e.res.Status != store.StatusCancelled {
		t.Fatalf("the cancelled run ended %v %+v", e.err, e.res)
	}
	if run.Running("live") {
		t.Error("a cancelled run is still running")
	}
	if _, err := run.Cancel(ctx, st, "live", &run.Cancelled{By: "ann@test"}); !errors.Is(err, run.ErrNotCancellable) {
		t.Errorf("cancel an ended task: %v, want ErrNotCancellable", err)
	}
}
