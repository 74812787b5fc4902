package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// serveFlags are sextant serve's flags.
type serveFlags struct {
	addr, pipelines, config string
	replay, recordReplays   bool
	allowHosts              []string
	lim                     serve.Limits
	sf                      storeFlags
	tf                      temporalFlags // --temporal: the cluster runs the store lacks go on
}

func (a *app) serveCommand() *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:     "serve",
		Short:   "Serve the store over HTTP: the JSON API (/api/v1, OpenAPI) and the dashboard",
		Long:    help("serve"),
		Example: help("serve.example"),
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.serve(cmd.Context(), &f) },
	}
	c.Flags().StringVar(&f.addr, "addr", serve.DefaultAddr, "address to listen on (anything but loopback needs $"+serve.TokenEnv+")")
	c.Flags().StringVar(&f.pipelines, "pipelines", "", "directory of pipelines the API may run (DIR/NAME/pipeline.toml, DIR/*.toml)")
	c.Flags().StringVar(&f.config, "config", "", "server configuration (serve.toml): the proxy's [providers.NAME] blocks, [prices], [proxy] replay, allow_hosts")
	c.Flags().BoolVar(&f.replay, "replay", false, "the proxy answers from recordings only and never calls upstream")
	c.Flags().BoolVar(&f.recordReplays, "record-replays", false, "store each replayed proxy call as a replay execution of its task (by default a replay stores nothing)")
	c.Flags().StringArrayVar(&f.allowHosts, "allow-host", nil, "a name clients reach the server by, besides localhost and IP addresses (repeatable; added to --config's allow_hosts); other Host headers get 403")
	c.Flags().IntVar(&f.lim.MaxConns, "max-conns", serve.DefaultMaxConns, "most connections open at once (1/8 of them kept for loopback clients)")
	c.Flags().IntVar(&f.lim.MaxConnsPerIP, "max-conns-per-ip", serve.DefaultMaxConnsPerIP, "most connections open at once from one client other than loopback (IPv6: per /64)")
	c.Flags().IntVar(&f.lim.MaxRuns, "max-runs", serve.DefaultMaxRuns, "most runs started by the API with wait=false going on at once; one more is answered 503 with Retry-After")
	c.Flags().DurationVar(&f.lim.ReadTimeout, "read-timeout", serve.DefaultReadTimeout, "longest a client may take to send a request body")
	c.Flags().DurationVar(&f.lim.WriteTimeout, "write-timeout", serve.DefaultWriteTimeout, "longest one write of an answer may wait for the client to read")
	c.Flags().DurationVar(&f.lim.IdleTimeout, "idle-timeout", serve.DefaultIdleTimeout, "longest a kept-alive connection may wait for its next request")
	f.sf.add(c, false)
	f.tf.add(c, false)
	a.addTelemetryFlag(c)
	return c
}

// serve holds the store and serves it until SIGINT or SIGTERM.
func (a *app) serve(ctx context.Context, f *serveFlags) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	loc, token, err := a.serveChecks(f)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(loc.Dir)
	fresh := errors.Is(statErr, os.ErrNotExist)
	s, err := a.openStore(ctx, loc.Dir, createStore)
	if err != nil {
		return err
	}
	defer s.Close()
	srv, closeHandlers, err := a.newServer(ctx, s, f, token)
	if err != nil {
		s.Close()
		if fresh {
			os.RemoveAll(loc.Dir) // leave no empty store behind bad input
		}
		return err
	}
	defer closeHandlers(context.WithoutCancel(ctx))
	return srv.ServeStore(ctx, f.addr, loc.Dir, a.stdout)
}

// serveChecks finds the store serve holds and checks the flags and the
// token before anything is opened.
func (a *app) serveChecks(f *serveFlags) (project.StoreLoc, string, error) {
	loc, ok, err := f.sf.common()
	if err != nil {
		return project.StoreLoc{}, "", err
	}
	if !ok {
		l, notes, err := serve.PipelinesStore(f.pipelines)
		if err != nil {
			return project.StoreLoc{}, "", withInvalid(err)
		}
		for _, n := range notes {
			fmt.Fprintf(a.stderr, "note: %s\n", n)
		}
		loc = l
	}
	token := os.Getenv(serve.TokenEnv)
	if err := serve.CheckFlags(f.addr, token, f.lim); err != nil {
		return project.StoreLoc{}, "", usageErr(err)
	}
	return loc, token, nil
}

// newServer makes the server over s with the recording proxy (its
// providers' plugins from --config), the OTLP receiver and live span
// export; close releases them.
func (a *app) newServer(ctx context.Context, s *store.Store, f *serveFlags, token string) (*serve.Server, func(context.Context), error) {
	var reg *plugin.Registry
	if f.config != "" {
		if err := needFile("config", f.config); err != nil {
			return nil, nil, err
		}
		var err error
		if reg, err = a.registry(filepath.Dir(f.config)); err != nil {
			return nil, nil, err
		}
	}
	exp, err := a.telemetry(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	srv, closeProxy, err := serve.NewWithExtras(ctx, serve.Options{Store: s, Pipelines: f.pipelines, Addr: f.addr, Token: token,
		Logger: a.logger, Version: version, AllowHosts: f.allowHosts, Limits: f.lim, Prepare: a.servePrepare(s)},
		serve.Extras{Config: f.config, Registry: reg, Replay: f.replay, RecordReplays: f.recordReplays, OnSpans: exp.Spans,
			Cluster: layer.ServeCluster(f.tf.target(), layer.Options{Logger: a.logger})})
	if err != nil {
		a.shutdownTelemetry(ctx, exp)
		return nil, nil, err
	}
	return srv, func(ctx context.Context) { closeProxy(ctx); a.shutdownTelemetry(ctx, exp) }, nil
}
