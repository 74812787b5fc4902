package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/sextant-dev/sextant/host/internal/builtins" // the plugins the example pipeline uses
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func prepare(ctx context.Context, path string) (*run.Prepared, error) {
	entries, err := plugin.Discover(plugin.SearchPath(nil, filepath.Dir(path)), sdk.Registered())
	if err != nil {
		return nil, err
	}
	return run.Prepare(ctx, path, plugin.NewRegistry(entries, plugin.WithLogger(quiet())), quiet())
}

func options() Options { return Options{Logger: quiet(), Prepare: prepare, Command: "sextant test"} }

// fixture is a copy of the email-triage example (whose invoice waits for
// a person) and a store directory beside it, not made yet.
type fixture struct {
	pipeline, store string
	input           map[string]any
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "..", "pipelines", "email-triage")
	dst := filepath.Join(dir, "email-triage")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == ".sextant" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	var input map[string]any
	b, err := os.ReadFile(filepath.Join(dst, "inputs", "invoice.json"))
	if err != nil || json.Unmarshal(b, &input) != nil {
		t.Fatalf("invoice input: %v", err)
	}
	return fixture{pipeline: filepath.Join(dst, "pipeline.toml"), store: filepath.Join(dir, ".sextant"), input: input}
}

// start runs the invoice as task id on b, which must leave it waiting.
func (f fixture) start(t *testing.T, b Backend, id string) {
	t.Helper()
	ctx := context.Background()
	prep, err := prepare(ctx, f.pipeline)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	res, err := b.Run(ctx, RunRequest{Prep: prep, Input: run.Input{ID: id, Input: f.input}})
	if err != nil || res.Status != store.StatusWaiting {
		t.Fatalf("run %s on %s: %v %+v", id, b.Kind(), err, res)
	}
}

func open(t *testing.T, tg Target) Backend {
	t.Helper()
	b, err := Open(context.Background(), tg, options())
	if err != nil {
		t.Fatalf("open %+v: %v", tg, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestOpenLocal: a store no process holds is local; only a command that
// records new things creates it, and a missing one is invalid input that
// leaves nothing behind.
func TestOpenLocal(t *testing.T) {
	f := newFixture(t)
	_, err := Open(context.Background(), Target{Store: f.store}, options())
	if !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("open a missing store for update: %v, want invalid input", err)
	}
	if _, err := os.Stat(f.store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused open left %s behind: %v", f.store, err)
	}
	b := open(t, Target{Store: f.store, Create: true})
	if b.Kind() != Local {
		t.Fatalf("a free store: %s, want local", b.Kind())
	}
	f.start(t, b, "t1")
	res, err := b.Cancel(context.Background(), "t1", run.Cancelled{By: "ann@test", Reason: "stale"})
	if err != nil || res.Status != store.StatusCancelled {
		t.Fatalf("cancel: %v %+v", err, res)
	}
	if _, err := b.Cancel(context.Background(), "nope", run.Cancelled{By: "ann@test"}); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("cancel an unknown task: %v, want invalid input", err)
	}
}

// TestOpenHeldByRun: a store another process holds without a server is
// remote: a cancel goes over the store's socket while the holder serves it
// (as a run does), and fails with the lock error while it does not.
func TestOpenHeldByRun(t *testing.T) {
	f := newFixture(t)
	l := open(t, Target{Store: f.store, Create: true})
	f.start(t, l, "t1")
	b := open(t, Target{Store: f.store})
	if _, ok := b.(*holder); !ok || b.Kind() != Remote {
		t.Fatalf("a store held by a run: %T %s, want the holder", b, b.Kind())
	}
	ctx := context.Background()
	_, err := b.Cancel(ctx, "t1", run.Cancelled{By: "ann@test"})
	var le *store.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("cancel while the holder serves nothing: %v, want the lock error", err)
	}
	if _, err := b.Resume(ctx, "t1", nil); !errors.As(err, &le) {
		t.Fatalf("resume through the holder: %v, want the lock error", err)
	}
	stop := l.(*local).serveCancels()
	defer stop()
	res, err := b.Cancel(ctx, "t1", run.Cancelled{By: "ann@test", Reason: "stale"})
	if err != nil || res.Status != store.StatusCancelled || res.Task != "t1" {
		t.Fatalf("cancel over the socket: %v %+v", err, res)
	}
	if _, err := b.Cancel(ctx, "nope", run.Cancelled{By: "ann@test"}); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("cancel an unknown task over the socket: %v, want invalid input", err)
	}
}

// TestOpenHeldByServer: a store a sextant serve holds is remote, through
// its API: runs, cancels and their refusals (a conflict is invalid input)
// go through it, and what must hold the store itself names the server.
func TestOpenHeldByServer(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	st := serveFixture(t, f)

	b := open(t, Target{Store: f.store, Create: true})
	if _, ok := b.(*server); !ok || b.Kind() != Remote {
		t.Fatalf("a store held by a server: %T %s, want the server", b, b.Kind())
	}
	f.start(t, b, "t1")
	if tk, err := st.Task(ctx, "t1"); err != nil || tk.Status != store.StatusWaiting {
		t.Fatalf("the server's store has no waiting t1: %v %+v", err, tk)
	}
	res, err := b.Cancel(ctx, "t1", run.Cancelled{By: "ann@test", Reason: "stale"})
	if err != nil || res.Status != store.StatusCancelled {
		t.Fatalf("cancel through the server: %v %+v", err, res)
	}
	if _, err := b.Cancel(ctx, "t1", run.Cancelled{By: "ann@test"}); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("a second cancel: %v, want invalid input (409)", err)
	}
	if _, err := b.Send(ctx, "", run.Delivery{Kind: store.WaitMessage, Name: "paid", Key: "k"}); !errors.As(err, new(*UsageError)) {
		t.Fatalf("a keyed message through the server: %v, want a usage error", err)
	}
	if _, err := OpenStore(ctx, f.store, Update, nil, quiet(), "sextant evolve"); !errors.As(err, new(*HeldError)) {
		t.Fatalf("OpenStore beside the server: %v, want a HeldError", err)
	}
}

// serveFixture opens the fixture's store and serves it with a real
// sextant serve on a loopback port, announced as its holder (the info
// file); both end with the test.
func serveFixture(t *testing.T, f fixture) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, f.store, store.NewConfig().WithLogger(quiet()).WithSyncCheckpoints(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Options{Store: st, Pipelines: filepath.Dir(filepath.Dir(f.pipeline)), Prepare: prepare, Addr: lis.Addr().String(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	})
	remove, err := serve.WriteInfo(f.store, serve.Info{URL: "http://" + lis.Addr().String(), PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	return st
}
