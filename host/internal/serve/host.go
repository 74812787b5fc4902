package serve

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/otlp"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// What sextant serve assembles around a Server: the routes beside its API,
// the store it holds when nothing names one, and the checks of its flags.

// InvalidError is a configuration sextant serve refuses before it
// listens (exit 2 in the CLI): a server file with problems, options that
// cannot work.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// Is makes the error sdk.ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == sdk.ErrInvalid }

// Extras are the routes sextant serve mounts beside its API: the
// recording proxy, with its providers from Config, and the OTLP/HTTP
// receiver, with the sink routes Temporal workers write through
// (sextant worker --store-url).
type Extras struct {
	// Config is the server configuration file (serve.toml): the proxy's
	// [providers.NAME] blocks, [prices], [proxy] replay, allow_hosts.
	// Empty: no providers (every proxied call must be replayed).
	Config string
	// Registry resolves Config's providers; required with Config.
	Registry *plugin.Registry
	// Replay and RecordReplays force the proxy's modes, whatever Config
	// says.
	Replay, RecordReplays bool
	// OnSpans exports the spans the proxy records live (nil: no export).
	// Spans received over OTLP are not exported again.
	OnSpans func([]store.Span)
	// Cluster, when set, connects to the cluster runs go on
	// (Options.Cluster); the function NewWithExtras returns closes it.
	Cluster func(context.Context) (Cluster, error)
}

// NewWithExtras is New with x's routes added to o.Handlers and Config's
// allow_hosts to o.AllowHosts (the union: either may name a host); o.Token
// is a secret the proxy scrubs from answers. The function returned
// releases the proxy's providers. A bad Config or Options is an *InvalidError.
func NewWithExtras(ctx context.Context, o Options, x Extras) (*Server, func(context.Context), error) {
	var fileHosts []string
	px, closeProviders, err := proxy.Open(ctx, proxy.OpenOptions{Config: x.Config, Registry: x.Registry, Store: o.Store, Replay: x.Replay,
		RecordReplays: x.RecordReplays, Secrets: []string{o.Token}, Logger: o.Logger, OnSpans: x.OnSpans,
		OnConfig: func(srv *pipeline.Server) { fileHosts = srv.AllowHosts }})
	if err != nil {
		return nil, nil, &InvalidError{err}
	}
	recv, err := otlp.NewHandler(otlp.Config{Store: o.Store, Prices: run.DefaultPrices(), Logger: o.Logger})
	if err != nil {
		closeProviders(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	h := px.Handlers()
	h[otlp.Route] = recv
	maps.Copy(h, SinkHandlers(o.Store))
	maps.Copy(h, o.Handlers)
	o.Handlers = h
	o.AllowHosts = append(slices.Clone(o.AllowHosts), fileHosts...)
	if x.Cluster != nil {
		if o.Cluster, err = x.Cluster(ctx); err != nil {
			closeProviders(context.WithoutCancel(ctx))
			return nil, nil, err
		}
		closeProxy := closeProviders
		closeProviders = func(ctx context.Context) {
			closeProxy(ctx)
			o.Cluster.Close()
		}
	}
	srv, err := New(o)
	if err != nil {
		closeProviders(context.WithoutCancel(ctx))
		return nil, nil, &InvalidError{err}
	}
	return srv, closeProviders, nil
}

// CheckLimitFlags refuses limits given on sextant serve's command line
// that cannot work, naming the flag (New fills zero fields with defaults;
// on the command line a zero is a mistake).
func CheckLimitFlags(l Limits) error {
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
	if l.MaxRuns < 1 {
		return fmt.Errorf("--max-runs %d: want at least 1", l.MaxRuns)
	}
	return nil
}

// PipelinesStore is the store sextant serve holds when nothing names one
// (no --store, $SEXTANT_STORE or sextant.toml): the one store every
// pipeline under dir writes to, else ./.sextant. notes are what the
// operator should know: the files under dir that are not pipelines
// (skipped), and the stores the pipelines write to when they are several,
// with how to serve one of them. Errors are the pipelines' problems.
func PipelinesStore(dir string) (_ project.StoreLoc, notes []string, _ error) {
	cwd := project.StoreLoc{Dir: project.DefaultStore, From: project.FromCwd}
	if dir == "" {
		return cwd, nil, nil
	}
	found, err := DiscoverPipelines(dir)
	if err != nil {
		return project.StoreLoc{}, nil, err
	}
	for _, f := range found.Skipped {
		notes = append(notes, "--pipelines: "+f)
	}
	var stores []string
	seen := map[string]bool{}
	for _, p := range found.Pipelines {
		d, err := filepath.Abs(project.PipelineStore(p.File, p.Store.Dir))
		if err != nil {
			return project.StoreLoc{}, nil, err
		}
		if !seen[d] {
			seen[d] = true
			stores = append(stores, project.RelToCwd(d)) // as the user would type it
		}
	}
	switch len(stores) {
	case 0:
		return cwd, notes, nil
	case 1:
		return project.StoreLoc{Dir: stores[0], From: project.FromPipeline}, notes, nil
	}
	sort.Strings(stores)
	notes = append(notes, fmt.Sprintf("the pipelines under %s write to %d stores (%s); serving ./.sextant: pass --store DIR (or store = \"DIR\" in %s) to serve the one their runs are in",
		dir, len(stores), strings.Join(stores, ", "), project.FileName))
	return cwd, notes, nil
}
