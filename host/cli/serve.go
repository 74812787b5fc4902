package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/otlp"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/run"
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
}

func (a *app) serveCommand() *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the store over HTTP: the JSON API (/api/v1, OpenAPI) and the dashboard",
		Long:  help("serve"),
		Example: `  sextant serve --pipelines pipelines
  sextant serve --config serve.toml            # record: OPENAI_BASE_URL=http://127.0.0.1:7777/v1
  sextant serve --config serve.toml --replay   # answer from recordings only (CI)
  SEXTANT_SERVE_TOKEN=s3cret sextant serve --addr 0.0.0.0:7777 --store /data/.sextant
  SEXTANT_SERVE_TOKEN=s3cret sextant serve --addr 0.0.0.0:7777 --allow-host sextant.example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.serve(cmd.Context(), &f) },
	}
	c.Flags().StringVar(&f.addr, "addr", serve.DefaultAddr, "address to listen on (anything but loopback needs $"+serve.TokenEnv+")")
	c.Flags().StringVar(&f.pipelines, "pipelines", "", "directory of pipelines the API may run (DIR/NAME/pipeline.toml, DIR/*.toml)")
	c.Flags().StringVar(&f.config, "config", "", "server configuration (serve.toml): the proxy's [providers.NAME] blocks, [prices], [proxy] replay, allow_hosts")
	c.Flags().BoolVar(&f.replay, "replay", false, "the proxy answers from recordings only and never calls upstream")
	c.Flags().BoolVar(&f.recordReplays, "record-replays", false, "store each replayed proxy call as a replay execution of its task (by default a replay stores nothing)")
	c.Flags().StringArrayVar(&f.allowHosts, "allow-host", nil, "a name clients reach the server by, besides localhost and IP addresses (repeatable; added to --config's allow_hosts); other Host headers get 403")
	c.Flags().IntVar(&f.lim.MaxConns, "max-conns", serve.DefaultMaxConns, "most connections open at once (1/8 of them kept for loopback clients)")
	c.Flags().IntVar(&f.lim.MaxConnsPerIP, "max-conns-per-ip", serve.DefaultMaxConnsPerIP, "most connections open at once from one client other than loopback (IPv6: per /64)")
	c.Flags().DurationVar(&f.lim.ReadTimeout, "read-timeout", serve.DefaultReadTimeout, "longest a client may take to send a request body")
	c.Flags().DurationVar(&f.lim.WriteTimeout, "write-timeout", serve.DefaultWriteTimeout, "longest one write of an answer may wait for the client to read")
	c.Flags().DurationVar(&f.lim.IdleTimeout, "idle-timeout", serve.DefaultIdleTimeout, "longest a kept-alive connection may wait for its next request")
	f.sf.add(c, false)
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
	_, statErr := os.Stat(loc.dir)
	fresh := errors.Is(statErr, os.ErrNotExist)
	s, err := a.openStore(ctx, loc.dir, createStore)
	if err != nil {
		return err
	}
	defer s.Close()
	srv, closeHandlers, err := a.newServer(ctx, s, f, token)
	if err != nil {
		s.Close()
		if fresh {
			os.RemoveAll(loc.dir) // leave no empty store behind bad input
		}
		return err
	}
	defer closeHandlers(context.WithoutCancel(ctx))
	l, err := net.Listen("tcp", f.addr)
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
	if err := srv.Serve(ctx, l); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// serveChecks finds the store serve holds and checks the flags and the
// token before anything is opened.
func (a *app) serveChecks(f *serveFlags) (storeLoc, string, error) {
	loc, ok, err := f.sf.common()
	if err != nil {
		return storeLoc{}, "", err
	}
	if !ok {
		if loc, err = a.pipelinesStore(f.pipelines); err != nil {
			return storeLoc{}, "", withInvalid(err)
		}
	}
	if err := checkLimitFlags(f.lim); err != nil {
		return storeLoc{}, "", usageErr(err)
	}
	token := os.Getenv(serve.TokenEnv)
	if loop, err := serve.Loopback(f.addr); err != nil {
		return storeLoc{}, "", usageErr(fmt.Errorf("--addr: %w", err))
	} else if !loop && token == "" {
		return storeLoc{}, "", usageErr(fmt.Errorf("--addr %s is not loopback: set %s to the bearer token every request must send", f.addr, serve.TokenEnv))
	}
	return loc, token, nil
}

// newServer makes the server over s with its handlers; close releases
// the handlers.
func (a *app) newServer(ctx context.Context, s *store.Store, f *serveFlags, token string) (*serve.Server, func(context.Context), error) {
	handlers, fileHosts, closeHandlers, err := a.serveHandlers(ctx, s, f.config, proxyMode{replay: f.replay, recordReplays: f.recordReplays, token: token})
	if err != nil {
		return nil, nil, err
	}
	srv, err := serve.New(serve.Options{Store: s, Pipelines: f.pipelines, Addr: f.addr, Token: token, Logger: a.logger, Version: version,
		AllowHosts: append(f.allowHosts, fileHosts...), Limits: f.lim, // the union: either may name a host
		Handlers: handlers,
		Prepare:  a.servePrepare(s)})
	if err != nil {
		closeHandlers(context.WithoutCancel(ctx))
		return nil, nil, withInvalid(err)
	}
	return srv, closeHandlers, nil
}

// checkLimitFlags refuses limits given on the command line that cannot
// work, naming the flag.
func checkLimitFlags(l serve.Limits) error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--read-timeout", l.ReadTimeout}, {"--write-timeout", l.WriteTimeout}, {"--idle-timeout", l.IdleTimeout}} {
		if d.v <= 0 {
			return fmt.Errorf("%s %v: want a duration above zero, such as 30s", d.flag, d.v)
		}
	}
	if l.MaxConns < 2 {
		return fmt.Errorf("--max-conns %d: want at least 2", l.MaxConns)
	}
	if l.MaxConnsPerIP < 1 {
		return fmt.Errorf("--max-conns-per-ip %d: want at least 1", l.MaxConnsPerIP)
	}
	return nil
}

// proxyMode is how serve runs the recording proxy.
type proxyMode struct {
	replay, recordReplays bool
	// token is the server's token: a key the proxy scrubs from answers.
	token string
}

// serveHandlers are the routes serve mounts beside its API: the recording
// proxy (its providers from config) and the OTLP/HTTP receiver. Spans the
// proxy records are exported live when telemetry is on; spans received over
// OTLP are not exported again.
func (a *app) serveHandlers(ctx context.Context, s *store.Store, config string, mode proxyMode) (map[string]http.Handler, []string, func(context.Context), error) {
	var reg *plugin.Registry
	if config != "" {
		if err := needFile("config", config); err != nil {
			return nil, nil, nil, err
		}
		var err error
		if reg, err = a.registry(filepath.Dir(config)); err != nil {
			return nil, nil, nil, err
		}
	}
	exp, err := a.telemetry(ctx, s)
	if err != nil {
		return nil, nil, nil, err
	}
	var allowHosts []string
	px, closeProviders, err := proxy.Open(ctx, proxy.OpenOptions{Config: config, Registry: reg, Store: s, Replay: mode.replay,
		RecordReplays: mode.recordReplays, Secrets: []string{mode.token}, Logger: a.logger, OnSpans: exp.Spans,
		OnConfig: func(srv *pipeline.Server) { allowHosts = srv.AllowHosts }})
	if err != nil {
		a.shutdownTelemetry(ctx, exp)
		return nil, nil, nil, withInvalid(err)
	}
	closeAll := func(ctx context.Context) {
		closeProviders(ctx)
		a.shutdownTelemetry(ctx, exp)
	}
	recv, err := otlp.NewHandler(otlp.Config{Store: s, Prices: run.DefaultPrices(), Logger: a.logger})
	if err != nil {
		closeAll(ctx)
		return nil, nil, nil, err
	}
	h := px.Handlers()
	h[otlp.Route] = recv
	maps.Copy(h, serve.SinkHandlers(s)) // Temporal workers write through these (sextant worker --store-url)
	return h, allowHosts, closeAll, nil
}

// pipelinesStore is the store serve holds when nothing names one (no
// --store, $SEXTANT_STORE or sextant.toml): the one store every pipeline
// under dir writes to, else ./.sextant, with a note naming the stores the
// pipelines write to and how to serve one of them. Files under dir that
// are not pipelines are named in notes and skipped.
func (a *app) pipelinesStore(dir string) (storeLoc, error) {
	cwd := storeLoc{".sextant", fromCwd}
	if dir == "" {
		return cwd, nil
	}
	found, err := serve.DiscoverPipelines(dir)
	if err != nil {
		return storeLoc{}, err
	}
	for _, f := range found.Skipped {
		fmt.Fprintf(a.stderr, "note: --pipelines: %s\n", f)
	}
	var stores []string
	seen := map[string]bool{}
	wd, _ := os.Getwd()
	for _, p := range found.Pipelines {
		d, err := filepath.Abs(pipelineStore(p))
		if err != nil {
			return storeLoc{}, err
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		// Shown as the user would type it: relative to here when below it.
		if rel, err := filepath.Rel(wd, d); err == nil && wd != "" && !strings.HasPrefix(rel, "..") {
			d = rel
		}
		stores = append(stores, d)
	}
	switch len(stores) {
	case 0:
		return cwd, nil
	case 1:
		return storeLoc{stores[0], fromPipeline}, nil
	}
	sort.Strings(stores)
	fmt.Fprintf(a.stderr, "note: the pipelines under %s write to %d stores (%s); serving ./.sextant: pass --store DIR (or store = \"DIR\" in %s) to serve the one their runs are in\n",
		dir, len(stores), strings.Join(stores, ", "), project.FileName)
	return cwd, nil
}
