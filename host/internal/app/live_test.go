package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// TestShowAndMoveLive: with no store the configured version is live, shown
// without creating a store, and only a move to it is accepted; with a store,
// a move to a version never promoted is refused and moves nothing.
func TestShowAndMoveLive(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	p, err := pipeline.Load(ctx, f.pipeline, nil, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ShowLive(ctx, f.store, p, options())
	if err != nil || l.Live.Version == "" || l.Live != l.Configured {
		t.Fatalf("no store: %+v, %v", l, err)
	}
	if _, err := os.Stat(f.store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("showing the live version made a store: %v", err)
	}
	var out bytes.Buffer
	m := evolve.Move{Action: evolve.MovePromote, Version: l.Live.Version}
	if err := MoveLive(ctx, &out, f.store, p, m, options()); err != nil || !strings.Contains(out.String(), "live already") {
		t.Fatalf("promote the configured version, no store: %v, %q", err, out.String())
	}
	m.Version = "9.9.9"
	if err := MoveLive(ctx, &out, f.store, p, m, options()); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("promote another version, no store: %v, want invalid input", err)
	}
	open(t, Target{Store: f.store, Create: true}).Close()
	if err := MoveLive(ctx, &out, f.store, p, m, options()); err == nil {
		t.Fatal("promoting a version never promoted was accepted")
	}
	if after, err := ShowLive(ctx, f.store, p, options()); err != nil || after.Live != l.Live {
		t.Fatalf("after a refused move: %+v, %v", after, err)
	}
}

// TestServePrepare: a pipeline that does not prepare is the caller's
// error; one that does comes back ready to run.
func TestServePrepare(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	s, err := OpenStore(ctx, f.store, Create, nil, quiet(), "sextant test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bad := errors.New("no such pipeline")
	failing := func(context.Context, string) (*run.Prepared, error) { return nil, bad }
	if _, err := ServePrepare(s, failing, options())(ctx, f.pipeline); !errors.Is(err, bad) {
		t.Fatalf("failing prepare: %v", err)
	}
	prep, err := ServePrepare(s, prepare, options())(ctx, f.pipeline)
	if err != nil || prep.Pipeline == nil {
		t.Fatalf("prepare: %v", err)
	}
	prep.Close(ctx)
}
