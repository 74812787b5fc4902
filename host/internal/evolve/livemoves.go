package evolve

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// SettleLive makes an evolution's winner the live version of conf (the
// pipeline as configured), expecting base, the version it was derived
// from, to be live still, and writes to w what is live now. A refused
// move says how to make the recorded version live by hand.
func SettleLive(ctx context.Context, w io.Writer, st *store.Store, conf *pipeline.Pipeline, settled *Settlement, base string, at time.Time) error {
	m := settled.Winner.Strategy.Metadata
	l, err := MoveLive(ctx, st, conf, Move{Version: m.Version, Action: MoveEvolve, By: store.Operator(),
		Reason: fmt.Sprintf("evolve: %s candidate %s", settled.Winner.Mutator, settled.Winner.ID()), At: at, Expect: base})
	if err != nil {
		return fmt.Errorf("%w (the version is recorded: sextant promote %s %s makes it live)", err, conf.File, m.Version)
	}
	fmt.Fprintf(report.TermSafe(w), "%s: %s %s is live (was %s)\n", conf.Name, m.Name, m.Version, l.Live.From)
	l.WritePinned(w, conf)
	return nil
}

// MoveUnrecorded is a move (promote, rollback) of p's live version when
// p has no store, at dir: nothing was ever recorded, so only the
// configured version is known, and it is live already. It says so on w,
// or refuses a move to any other version.
func MoveUnrecorded(ctx context.Context, w io.Writer, p *pipeline.Pipeline, dir string, m Move) error {
	l, err := GetLive(ctx, nil, p)
	if err != nil {
		return err
	}
	if m.Version != l.Live.Version {
		return invalid(m.Action+" "+p.Name, fmt.Sprintf("no store at %s, so nothing was promoted: only the configured %s %s can be live", dir, l.Live.Name, l.Live.Version))
	}
	fmt.Fprintf(report.TermSafe(w), "%s: %s %s is live already\n", p.Name, l.Live.Name, l.Live.Version)
	return nil
}

// WriteLiveIn writes, under strategy log, where a version of the
// strategy name is live (sextant strategy live PIPELINE shows the moves).
func WriteLiveIn(ctx context.Context, w io.Writer, st *store.Store, name string) error {
	ls, err := LiveFor(ctx, st, name)
	if err != nil {
		return err
	}
	w = report.TermSafe(w)
	for _, l := range ls {
		fmt.Fprintf(w, "live in %s: %s (%s by %s)\n", l.Pipeline, l.Live.Version, l.Live.Action, l.Live.By)
	}
	return nil
}
