//go:build !notemporal

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/temporal"
)

func (a *app) workerCommand() *cobra.Command {
	var tf temporalFlags
	var pipelines, storeURL, storeDir string
	var heartbeat time.Duration
	c := &cobra.Command{
		Use:   "worker --temporal HOST:PORT --pipelines DIR (--store-url URL | --store DIR)",
		Short: "Run pipelines for a Temporal cluster",
		Long: `worker polls a Temporal task queue and runs the sextant workflow and its
activities for the pipelines under --pipelines (each */pipeline.toml and
*.toml, as sextant serve finds them): the routine's navigator in local
activities, each step as an activity, timers as Temporal's durable timers,
people, messages and signals as workflow updates. Start as many workers as
you like, on any machines: a step whose worker dies moves to another within
the run's heartbeat timeout, and an LLM call answered before the crash is
served from its recording, never billed twice.

Results land in a sextant store: through the sextant serve that holds it
(--store-url, any number of workers; the token is $SEXTANT_SERVE_TOKEN), or
in a store this worker holds itself (--store, a single worker). Recordings
are written as soon as a provider answers; a run's task, execution and spans
once it ended, so replay, gate and evolve read it as a local run.

Every worker of a task queue must have the same pipelines and strategies: a
worker whose strategy differs from the one a run started with refuses it.
The worker stops on SIGINT or SIGTERM, letting running steps finish.`,
		Example: `  sextant serve --addr 127.0.0.1:7777 &
  sextant worker --temporal temporal.internal:7233 --pipelines pipelines --store-url http://127.0.0.1:7777`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if tf.addr == "" {
				return usageErr(errors.New("--temporal: give the Temporal front end, HOST:PORT"))
			}
			if pipelines == "" {
				return usageErr(errors.New("--pipelines: give the folder of the pipelines to run"))
			}
			if (storeURL == "") == (storeDir == "") {
				return usageErr(errors.New("give one of --store-url (a sextant serve holding the store) or --store (a store this worker holds)"))
			}
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
			m, closeAll, err := a.workerPipelines(ctx, pipelines, sink)
			if err != nil {
				return err
			}
			defer closeAll(context.WithoutCancel(ctx))
			c, err := temporal.Dial(ctx, tf.addr, tf.namespace)
			if err != nil {
				return err
			}
			defer c.Close()
			w, err := temporal.NewWorker(c, temporal.WorkerOptions{TaskQueue: tf.queue, Pipelines: m, Sink: sink, Heartbeat: heartbeat, Replay: a.replayShard})
			if err != nil {
				return err
			}
			if err := w.Start(); err != nil {
				return fmt.Errorf("worker: %w", err)
			}
			names := make([]string, 0, len(m))
			for n := range m {
				names = append(names, n)
			}
			sort.Strings(names)
			fmt.Fprintf(a.stderr, "sextant worker on %s (namespace %s, task queue %s): %s\n", tf.addr, tf.namespace, tf.queueName(), strings.Join(names, ", "))
			<-ctx.Done()
			w.Stop()
			return nil
		},
	}
	tf.add(c, false)
	c.Flags().StringVar(&pipelines, "pipelines", "", "folder of the pipelines to run (*/pipeline.toml and *.toml)")
	c.Flags().StringVar(&storeURL, "store-url", "", "URL of the sextant serve that holds the store results land in")
	c.Flags().StringVar(&storeDir, "store", "", "a store this worker holds itself (then the only worker writing to it)")
	c.Flags().DurationVar(&heartbeat, "heartbeat", 2*time.Second, "how often a running step tells Temporal this worker is alive")
	return c
}

// workerPipelines prepares every pipeline under dir for a worker.
func (a *app) workerPipelines(ctx context.Context, dir string, rec run.Recorder) (temporal.PipelineMap, func(context.Context), error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, withInvalid(fmt.Errorf("--pipelines: %w", err))
	}
	var files []string
	for _, pat := range []string{"*/pipeline.toml", "*.toml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, nil, err
		}
		files = append(files, m...)
	}
	m := temporal.PipelineMap{}
	var preps []*run.Prepared
	closeAll := func(ctx context.Context) {
		for _, p := range preps {
			p.Close(ctx)
		}
	}
	for _, f := range files {
		p, err := a.prepare(ctx, f)
		if err != nil {
			closeAll(ctx)
			return nil, nil, err
		}
		preps = append(preps, p)
		if _, dup := m[p.Pipeline.Name]; dup {
			closeAll(ctx)
			return nil, nil, withInvalid(fmt.Errorf("%s: pipeline %q again", f, p.Pipeline.Name))
		}
		prec := rec
		if len(p.Pipeline.Store.Redact) > 0 {
			red, err := store.NewRedactor(p.Pipeline.Store.Redact...)
			if err != nil {
				closeAll(ctx)
				return nil, nil, withInvalid(fmt.Errorf("%s: store.redact: %w", p.Pipeline.File, err))
			}
			prec = temporal.WithRedactor(rec, red)
		}
		m[p.Pipeline.Name] = p.NewStepper(run.Config{Logger: a.logger}, prec)
	}
	if len(m) == 0 {
		return nil, nil, withInvalid(fmt.Errorf("--pipelines %s: no pipeline (*/pipeline.toml or *.toml)", dir))
	}
	return m, closeAll, nil
}

// A worker writes through a running server's sink routes as through its
// own store.
var _ temporal.Sink = (*serve.Sink)(nil)
