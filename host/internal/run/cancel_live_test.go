package run_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// TestCancelLive: a run in progress in this process is cancelled through
// Cancel, which waits for it to end; while it runs, a second run of the
// same task is refused, and once it has ended the task is no longer
// running and a second Cancel finds it ended.
func TestCancelLive(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	var g *gate
	r, end := startChain10(t, st, "live", func(p sdk.Provider) sdk.Provider { g = newGate(p); return g })
	t.Cleanup(g.open)
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

// errPoller is a provider that reports its call, then asks its context
// only for Err until it ends: it never asks for Done, so nothing makes
// the run's context (a lazyCtx) before Cancel does.
type errPoller struct {
	sdk.Provider
	started chan struct{}
}

func (p *errPoller) Chat(ctx context.Context, _ *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	p.started <- struct{}{}
	for ctx.Err() == nil {
		runtime.Gosched()
	}
	return nil, ctx.Err()
}

// TestCancelBeforeContextMade: a Cancel that reaches a run whose context
// nothing has made yet ends it cancelled, its cause (who and why) on the
// result and the task, as one that reaches a run waiting on Done.
func TestCancelBeforeContextMade(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	var poller *errPoller
	_, end := startChain10(t, st, "lazy", func(p sdk.Provider) sdk.Provider {
		poller = &errPoller{Provider: p, started: make(chan struct{}, 1)}
		return poller
	})
	<-poller.started
	res, err := run.Cancel(ctx, st, "lazy", &run.Cancelled{By: "ann@test", Reason: "stale"})
	if err != nil || res.Status != store.StatusCancelled {
		t.Fatalf("cancel a live run: %v %+v", err, res)
	}
	e := <-end
	if e.err != nil || e.res.Status != store.StatusCancelled || !strings.Contains(e.res.Error, "stale") {
		t.Fatalf("the cancelled run ended %v %+v", e.err, e.res)
	}
	task, err := st.Task(ctx, "lazy")
	if err != nil || task.Status != store.StatusCancelled || task.Cancelled == nil || task.Cancelled.By != "ann@test" || task.Cancelled.Reason != "stale" {
		t.Fatalf("task %+v, %v", task, err)
	}
}

// startChain10 starts chain10 as task id in st, its provider the one wrap
// makes of the scripted one: it returns the runner, and where the run's
// end will come.
func startChain10(t *testing.T, st *store.Store, id string, wrap func(sdk.Provider) sdk.Provider) (*run.Runner, <-chan ended) {
	prep := prepare(t, "testdata/chain10/pipeline.toml")
	p, _ := prep.Providers.Get("default")
	wrapped := *p
	wrapped.Plugin = wrap(p.Plugin)
	r := run.NewRunner(run.Config{Pipeline: prep.Pipeline, Navigator: prep.Navigator, Routine: prep.Routine, Strategy: prep.Strategy,
		Prices: prep.Prices, Store: st, Providers: run.NewProviders(nil, &wrapped)})
	end := make(chan ended, 1)
	go func() {
		res, err := r.Start(context.Background(), run.Input{ID: id, Input: map[string]any{"topic": "x"}})
		end <- ended{res, err}
	}()
	return r, end
}
