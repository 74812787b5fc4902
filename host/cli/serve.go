package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/run"
	"github.com/sextant-dev/sextant/host/serve"
)

func (a *app) serveCommand() *cobra.Command {
	var addr, pipelines string
	var sf storeFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the store over HTTP: the JSON API (/api/v1, OpenAPI) and the dashboard",
		Long: `serve holds the store (as its one writer) and serves a versioned JSON API under
/api/v1/ with its OpenAPI document at /api/v1/openapi.json: tasks (filters and
cursor pagination), a task's executions, spans, rewards and recordings, runs of
the pipelines under --pipelines, answers to waiting steps, messages and
signals, rewards with tags, strategies and their lineage and diffs, judged
replays with per-task outcomes, and the review queue.

It listens on loopback unless --addr says otherwise; any other address needs
a bearer token in $SEXTANT_SERVE_TOKEN, which every request must then send
(Authorization: Bearer TOKEN). While it runs, sextant run (of a pipeline it
serves), feedback and resume on its store go through its API,
gate, replay and merge record their verdict through it, and reads (runs,
show, export) use the store's snapshots as beside any writer.`,
		Example: `  sextant serve --pipelines pipelines
  SEXTANT_SERVE_TOKEN=s3cret sextant serve --addr 0.0.0.0:7777 --store /data/.sextant`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			loc, ok, err := sf.common()
			if err != nil {
				return err
			}
			if !ok {
				loc = storeLoc{".sextant", fromCwd}
			}
			token := os.Getenv(serve.TokenEnv)
			if loop, err := serve.Loopback(addr); err != nil {
				return usageErr(fmt.Errorf("--addr: %w", err))
			} else if !loop && token == "" {
				return usageErr(fmt.Errorf("--addr %s is not loopback: set %s to the bearer token every request must send", addr, serve.TokenEnv))
			}
			_, statErr := os.Stat(loc.dir)
			fresh := errors.Is(statErr, os.ErrNotExist)
			s, err := a.openStore(ctx, loc.dir, createStore)
			if err != nil {
				return err
			}
			defer s.Close()
			srv, err := serve.New(serve.Options{Store: s, Pipelines: pipelines, Addr: addr, Token: token, Logger: a.logger, Version: version,
				Prepare: func(ctx context.Context, path string) (*run.Prepared, error) { return a.prepare(ctx, path) }})
			if err != nil {
				s.Close()
				if fresh {
					os.RemoveAll(loc.dir) // leave no empty store behind bad input
				}
				return withInvalid(err)
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			url := "http://" + l.Addr().String()
			removeInfo, err := serve.WriteInfo(loc.dir, serve.Info{URL: url, PID: os.Getpid()})
			if err != nil {
				l.Close()
				return err
			}
			defer removeInfo()
			fmt.Fprintf(a.stdout, "sextant serve: listening on %s (store %s)\n", url, loc.dir)
			err = srv.Serve(ctx, l)
			if errors.Is(err, context.Canceled) {
				err = nil
			}
			return err
		},
	}
	c.Flags().StringVar(&addr, "addr", serve.DefaultAddr, "address to listen on (anything but loopback needs $"+serve.TokenEnv+")")
	c.Flags().StringVar(&pipelines, "pipelines", "", "directory of pipelines the API may run (DIR/NAME/pipeline.toml, DIR/*.toml)")
	sf.add(c, false)
	return c
}
