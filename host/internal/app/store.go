package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Mode says what a command may do to a store.
type Mode int

// The modes of OpenStore.
const (
	Read   Mode = iota // read only; the store must exist
	Update             // write to a store that must exist (feedback, resume, review)
	Create             // write, creating the store (run, import, evolve)
)

// OpenStore opens the store at dir for a command that does not go through
// a backend (reads, evolve, replay). Only Create may create one: a command
// given the wrong directory says so instead of leaving an empty store
// behind. p, when set, gives the store its [store] settings. A store a
// sextant serve holds is a *HeldError naming it (a read fails beside a
// server only when its snapshot could not be made).
func OpenStore(ctx context.Context, dir string, mode Mode, p *pipeline.Pipeline, logger *slog.Logger, command string) (*store.Store, error) {
	s, _, err := openStore(ctx, dir, mode, p, logger)
	var le *store.LockedError
	if errors.As(err, &le) && mode != Read {
		if srv, ok := serve.Discover(dir, le.PID); ok {
			return nil, &HeldError{LockedError: le, URL: srv.URL(), Command: command}
		}
	}
	return s, err
}

// openStore opens the store; fresh reports that it did not exist before.
func openStore(ctx context.Context, dir string, mode Mode, p *pipeline.Pipeline, logger *slog.Logger) (s *store.Store, fresh bool, err error) {
	info, statErr := os.Stat(dir)
	fresh = errors.Is(statErr, os.ErrNotExist)
	if fresh && mode != Create {
		return nil, false, invalid(fmt.Errorf("no store at %s (run a pipeline first, or pass --store DIR)", dir))
	}
	if statErr == nil && !info.IsDir() {
		return nil, false, invalid(fmt.Errorf("store %s is a file, not a directory (a store is a directory of its own: name a new one with --store, $SEXTANT_STORE or [store] dir)", dir))
	}
	cfg := store.NewConfig().WithLogger(logger).WithReadOnly(mode == Read).WithSyncCheckpoints(false)
	if p != nil {
		cfg = cfg.WithSyncCheckpoints(p.Store.FSync)
		if len(p.Store.Redact) > 0 {
			red, err := store.NewRedactor(p.Store.Redact...)
			if err != nil {
				return nil, false, invalid(fmt.Errorf("%s: store.redact: %w", p.File, err))
			}
			cfg = cfg.WithRedactor(red)
		}
	}
	s, err = store.Open(ctx, dir, cfg)
	if err != nil {
		if errors.As(err, new(*store.LockedError)) {
			return nil, false, err
		}
		return nil, false, fmt.Errorf("open store %s: %w", dir, err)
	}
	return s, fresh, nil
}

// HeldError is the error of a command that found its store held by
// sextant serve and cannot go through its API; it names the server so
// that the user knows what to stop. The LockedError is beneath it.
type HeldError struct {
	*store.LockedError
	URL, Command string
}

func (e *HeldError) Error() string {
	cmd := e.Command
	if cmd == "" {
		cmd = "this command"
	}
	return fmt.Sprintf("store %s is held by sextant serve at %s (pid %d), and %s does not go through its API: stop the server (or use its API) and run it again",
		e.Dir, e.URL, e.PID, cmd)
}

func (e *HeldError) Unwrap() error { return e.LockedError }
