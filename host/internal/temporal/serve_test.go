package temporal_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/temporal"
	"github.com/sextant-dev/sextant/host/internal/temporal/temporaltest"
	"github.com/sextant-dev/sextant/sdk"
)

// TestServe (real dev server): a worker process announces the pipelines of
// its folder, runs one started on its queue into its store, and stops
// cleanly when its context ends; a folder without pipelines fails before
// it dials.
func TestServe(t *testing.T) {
	srv := temporaltest.Start(t)
	dir := t.TempDir()
	writeChain(t, filepath.Join(dir, "alpha.toml"), "alpha", "")
	writeChain(t, filepath.Join(dir, "b", "pipeline.toml"), "beta", "")
	st := openStore(t)
	prep := func(ctx context.Context, path string) (*run.Prepared, error) {
		return run.Prepare(ctx, path, registry(t), quiet())
	}
	o := temporal.ServeOptions{HostPort: srv.HostPort, Namespace: srv.Namespace, Dir: dir, Prepare: prep, Logger: quiet(),
		Worker: temporal.WorkerOptions{TaskQueue: "serve-q", Sink: temporal.StoreSink(st)}}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	o.Out = pw
	done := make(chan error, 1)
	go func() { done <- temporal.Serve(ctx, o); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	want := "sextant worker on " + srv.HostPort + " (namespace " + srv.Namespace + ", task queue serve-q): alpha, beta\n"
	if err != nil || line != want {
		t.Fatalf("announced %q %v, want %q", line, err, want)
	}
	go io.Copy(io.Discard, pr)

	c := srv.Dial(t)
	p, err := prep(context.Background(), filepath.Join(dir, "alpha.toml"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	in := temporal.RunInput{Pipeline: "alpha", Task: "served-1", Strategy: p.Strategy.Hash()}
	if err := temporal.Start(context.Background(), c, "serve-q", in); err != nil {
		t.Fatal(err)
	}
	res, err := temporal.Follow(context.Background(), c, "served-1", temporal.UntilWait)
	if err != nil || res.Status != store.StatusCompleted {
		t.Fatalf("run on the served worker: %v %+v", err, res)
	}
	if task, err := st.Task(context.Background(), "served-1"); err != nil || task.Status != store.StatusCompleted {
		t.Fatalf("the worker's store: %v %+v", err, task)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("stop: %v", err)
	}

	o.Dir, o.HostPort = t.TempDir(), "127.0.0.1:1"
	if err := temporal.Serve(context.Background(), o); !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("a folder without pipelines: %v, want invalid input", err)
	}
}
