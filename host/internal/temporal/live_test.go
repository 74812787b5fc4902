package temporal_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/temporal"
	"github.com/sextant-dev/sextant/host/internal/temporal/temporaltest"
)

// promotedTriage copies the email-triage example into a folder of its
// own with a promoted version 2.1.0 of its strategy beside the configured
// 2.0.0, recorded in st: 2.1.0 asks a person before acting on any e-mail
// (user_confirmation 0.99), 2.0.0 acts on a confident one at once.
func promotedTriage(t *testing.T, st *store.Store) (dir string, p *pipeline.Pipeline) {
	t.Helper()
	dir = t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "email-triage"), os.DirFS("../../../pipelines/email-triage")); err != nil {
		t.Fatal(err)
	}
	sdir := filepath.Join(dir, "email-triage", "strategies")
	b, err := os.ReadFile(filepath.Join(sdir, "email-handler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(strings.Replace(string(b), `version = "2.0.0"`, `version = "2.1.0"`, 1), "user_confirmation = 0.60", "user_confirmation = 0.99", 1)
	if v2 == string(b) || !strings.Contains(v2, "0.99") {
		t.Fatal("the example strategy changed: update the test")
	}
	file := filepath.Join(sdir, "email-handler-2.1.0.toml")
	if err := os.WriteFile(file, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := strategy.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.PutStrategy(ctx, &store.StrategyRecord{Name: "email-handler", Version: "2.1.0", Parent: "2.0.0", Hash: s.Hash(), Created: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if p, err = pipeline.Load(ctx, filepath.Join(dir, "email-triage", "pipeline.toml"), nil, pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	return dir, p
}

// liveWorker starts a worker that loads the pipelines of dir as sextant
// worker does (temporal.LoadPipelines), writing into st.
func liveWorker(t *testing.T, srv *temporaltest.Server, queue, dir string, st *store.Store) *temporal.Worker {
	t.Helper()
	ctx := context.Background()
	prep := func(ctx context.Context, path string) (*run.Prepared, error) {
		return run.Prepare(ctx, path, registry(t), quiet())
	}
	m, closeAll, err := temporal.LoadPipelines(ctx, dir, temporal.StoreSink(st), prep, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(ctx) })
	w, err := temporal.NewWorker(srv.Dial(t), temporal.WorkerOptions{TaskQueue: queue, Pipelines: m, Sink: temporal.StoreSink(st)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestLiveVersionOnTemporal: a run on Temporal begins under the version
// promoted in the store, not the configured file, and records it; a run
// begun under a version keeps it when another one is made live before it
// ends, even on a worker that replays its history from the start; a run
// begun after the move uses the new live version.
func TestLiveVersionOnTemporal(t *testing.T) {
	// A worker that ran the run under another version would fail its
	// calls again and again: the deadline makes that a failure, not a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := temporaltest.Start(t)
	c := srv.Dial(t)
	st := openStore(t)
	dir, p := promotedTriage(t, st)
	move := func(version, action string) {
		t.Helper()
		if _, err := evolve.MoveLive(ctx, st, p, evolve.Move{Version: version, Action: action, By: "test", At: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	move("2.1.0", evolve.MovePromote)
	const queue = "q-live"
	w := liveWorker(t, srv, queue, dir, st)
	input := readInput(t, "../../../pipelines/email-triage/inputs/meeting.json")

	if err := temporal.Start(ctx, c, queue, temporal.RunInput{Pipeline: "email-triage", Task: "under-2.1.0", Input: input}); err != nil {
		t.Fatal(err)
	}
	res, err := temporal.Follow(ctx, c, "under-2.1.0", temporal.UntilWait)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusWaiting || len(res.Waiting) == 0 {
		t.Fatalf("under the promoted 2.1.0 the run asks a person first; got %s (%+v): it ran another version", res.Status, res.Waits)
	}

	// 2.0.0 goes live again while the run waits; its worker stops, and a
	// new one, which never saw the run, replays its history to go on.
	move("2.0.0", evolve.MoveRollback)
	w.Stop()
	liveWorker(t, srv, queue, dir, st)
	if err := temporal.Resume(ctx, c, "under-2.1.0", map[string]any{"answer": "yes"}); err != nil {
		t.Fatal(err)
	}
	if res, err = temporal.Result(ctx, c, "under-2.1.0"); err != nil || res.Status != store.StatusCompleted {
		t.Fatalf("resumed after the rollback: %+v, %v", res, err)
	}
	task, err := st.Task(ctx, "under-2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if task.Strategy.Name != "email-handler" || task.Strategy.Version != "2.1.0" {
		t.Fatalf("recorded strategy %+v, want email-handler 2.1.0, the version the run began under", task.Strategy)
	}

	if err := temporal.Start(ctx, c, queue, temporal.RunInput{Pipeline: "email-triage", Task: "under-2.0.0", Input: input}); err != nil {
		t.Fatal(err)
	}
	if res, err = temporal.Result(ctx, c, "under-2.0.0"); err != nil || res.Status != store.StatusCompleted || len(res.Waiting) > 0 {
		t.Fatalf("a run begun after the rollback: %+v, %v; want completed at once under 2.0.0", res, err)
	}
	if task, err = st.Task(ctx, "under-2.0.0"); err != nil || task.Strategy.Version != "2.0.0" {
		t.Fatalf("recorded strategy %+v, %v; want 2.0.0", task.Strategy, err)
	}
}
