package temporal

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/run"
)

// ServeOptions are what a worker process (sextant worker) runs with.
type ServeOptions struct {
	// HostPort and Namespace name the cluster's front end.
	HostPort, Namespace string
	// Dir is the folder of the pipelines to run (LoadPipelines).
	Dir string
	// Prepare loads one pipeline with its plugins.
	Prepare func(context.Context, string) (*run.Prepared, error)
	// Worker is the worker's options; Serve fills in Pipelines.
	Worker WorkerOptions
	// Out gets one line once the worker polls: where, and what it runs.
	Out    io.Writer
	Logger *slog.Logger
}

// Serve loads the pipelines of o.Dir and runs them for the cluster at
// o.HostPort until ctx ends, then stops the worker (running activities
// finish) and closes the pipelines.
func Serve(ctx context.Context, o ServeOptions) error {
	m, closeAll, err := LoadPipelines(ctx, o.Dir, o.Worker.Sink, o.Prepare, o.Logger)
	if err != nil {
		return err
	}
	defer closeAll(context.WithoutCancel(ctx))
	c, err := Dial(ctx, o.HostPort, o.Namespace)
	if err != nil {
		return err
	}
	defer c.Close()
	wo := o.Worker
	wo.Pipelines = m
	if wo.TaskQueue == "" {
		wo.TaskQueue = DefaultTaskQueue
	}
	w, err := NewWorker(c, wo)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer w.Stop()
	names := slices.Sorted(maps.Keys(m))
	fmt.Fprintf(o.Out, "sextant worker on %s (namespace %s, task queue %s): %s\n", o.HostPort, o.Namespace, wo.TaskQueue, strings.Join(names, ", "))
	<-ctx.Done()
	return nil
}
