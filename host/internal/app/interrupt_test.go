package app

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
)

// TestInterruptible: a SIGINT cancels a local run's context with the
// operator's cancellation.
func TestInterruptible(t *testing.T) {
	b := open(t, Target{Store: filepath.Join(t.TempDir(), ".sextant"), Create: true})
	ctx, stop := Interruptible(context.Background(), b)
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	var c *run.Cancelled
	if !errors.As(context.Cause(ctx), &c) || c.Reason != "interrupted by signal" || c.By == "" {
		t.Fatalf("cause %v, want the operator's cancellation", context.Cause(ctx))
	}
}
