//go:build !notemporal

package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/temporal"
)

func (a *app) workerCommand() *cobra.Command {
	var tf temporalFlags
	var pipelines, storeURL, storeDir string
	var heartbeat time.Duration
	c := &cobra.Command{
		Use:     "worker --temporal HOST:PORT --pipelines DIR (--store-url URL | --store DIR)",
		Short:   "Run pipelines for a Temporal cluster",
		Long:    help("worker"),
		Example: help("worker.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := temporal.CheckWorkerArgs(tf.addr, pipelines, storeURL, storeDir); err != nil {
				return usageErr(err)
			}
			return a.worker(cmd.Context(), &tf, pipelines, storeURL, storeDir, heartbeat)
		},
	}
	tf.add(c, false)
	c.Flags().StringVar(&pipelines, "pipelines", "", "folder of the pipelines to run (*/pipeline.toml and *.toml)")
	c.Flags().StringVar(&storeURL, "store-url", "", "URL of the sextant serve that holds the store results land in")
	c.Flags().StringVar(&storeDir, "store", "", "a store this worker holds itself (then the only worker writing to it)")
	c.Flags().DurationVar(&heartbeat, "heartbeat", 2*time.Second, "how often a running step tells Temporal this worker is alive")
	return c
}

// worker runs a worker until SIGINT or SIGTERM, writing results through
// the server at storeURL or into the store at storeDir.
func (a *app) worker(ctx context.Context, tf *temporalFlags, pipelines, storeURL, storeDir string, heartbeat time.Duration) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var sink temporal.Sink
	if storeURL != "" {
		sink = serve.NewSink(storeURL, os.Getenv(serve.TokenEnv), nil)
	} else {
		s, err := a.openStore(ctx, storeDir, createStore)
		if err != nil {
			return err
		}
		defer s.Close()
		sink = temporal.StoreSink(s)
	}
	return temporal.Serve(ctx, temporal.ServeOptions{HostPort: tf.addr, Namespace: tf.namespace, Dir: pipelines, Prepare: a.prepare,
		Worker: temporal.WorkerOptions{TaskQueue: tf.queue, Sink: sink, Heartbeat: heartbeat, Replay: a.replayShard}, Out: a.stderr, Logger: a.logger})
}

// A worker writes through a running server's sink routes as through its
// own store.
var _ temporal.Sink = (*serve.Sink)(nil)
