package app

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// ShowLive is sextant strategy live: p's live version as its store at dir
// records it. A pipeline with no store yet has only its configured version,
// and reading it creates nothing.
func ShowLive(ctx context.Context, dir string, p *pipeline.Pipeline, o Options) (*evolve.Live, error) {
	var st *store.Store
	if _, err := os.Stat(dir); err == nil {
		if st, err = OpenStore(ctx, dir, Read, p, o.Logger, o.Command); err != nil {
			return nil, err
		}
		defer st.Close()
	}
	return evolve.GetLive(ctx, st, p)
}

// MoveLive is promote and rollback: it moves p's live version in the store
// at dir through the backend that holds it, and says so on w. With no store
// at dir nothing was ever recorded (evolve.MoveUnrecorded).
func MoveLive(ctx context.Context, w io.Writer, dir string, p *pipeline.Pipeline, m evolve.Move, o Options) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return evolve.MoveUnrecorded(ctx, w, p, dir, m)
	}
	b, err := Open(ctx, Target{Store: dir, Pipeline: p}, o)
	if err != nil {
		return err
	}
	defer b.Close()
	before, l, err := b.Move(ctx, p, m)
	if err != nil {
		return err
	}
	l.WriteMoved(w, before, p)
	return nil
}

// ServePrepare is sextant serve's Options.Prepare: prepare, then follow
// each pipeline's live version in the store s the server holds.
func ServePrepare(s *store.Store, prepare func(context.Context, string) (*run.Prepared, error), o Options) func(context.Context, string) (*run.Prepared, error) {
	return func(ctx context.Context, path string) (*run.Prepared, error) {
		prep, err := prepare(ctx, path)
		if err != nil {
			return nil, err
		}
		if err := FollowLive(ctx, s, prep, o.Logger); err != nil {
			prep.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		return prep, nil
	}
}
