package app

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Interruptible makes a run on a Local backend one SIGINT or SIGTERM
// cancels ("interrupted by signal", by the operator); a second signal
// ends the process at once, leaving the run interrupted. Other backends'
// runs go on elsewhere: ctx is returned as it is. Call stop once the run
// returned.
func Interruptible(ctx context.Context, b Backend) (_ context.Context, stop func()) {
	if b.Kind() != Local {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			signal.Stop(sig) // a second signal is the default: the process ends
			cancel(&run.Cancelled{By: store.Operator(), Reason: "interrupted by signal"})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel(nil)
	}
}
