package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// OpenOptions is what Open needs: how `sextant serve --config serve.toml
// [--replay]` starts the proxy.
type OpenOptions struct {
	// Config is the server configuration file; "" means no providers
	// (every call must be replayed).
	Config string
	// Registry resolves the providers' plugins. Required with Config.
	Registry *plugin.Registry
	Store    *store.Store
	// Replay forces replay mode (--replay), whatever the file says.
	Replay bool
	// RecordReplays stores replayed calls (--record-replays), whatever
	// the file says.
	RecordReplays bool
	// Secrets are keys the host holds beside the providers' (the
	// server's token): scrubbed from answers, records and logs.
	Secrets []string
	Logger  *slog.Logger
	OnSpans func(spans []store.Span)
	// OnConfig, if set, gets the loaded server configuration: the
	// blocks that are not the proxy's (allow_hosts) are the caller's.
	OnConfig func(*pipeline.Server)
}

// Open loads the server configuration (every problem at once, as
// file:line), opens its providers and returns the proxy with a function
// that releases the providers' plugins. Blocks with use = "openai" or
// "anthropic" become the proxy's HTTP upstreams (NewUpstreams). In replay
// mode provider blocks whose api_key_env is unset are no error: upstream
// is never called.
func Open(ctx context.Context, o OpenOptions) (*Proxy, func(context.Context), error) {
	cfg := Config{Store: o.Store, Replay: o.Replay, RecordReplays: o.RecordReplays, Secrets: o.Secrets, Logger: o.Logger, OnSpans: o.OnSpans}
	closer := func(context.Context) {}
	if o.Config != "" {
		if o.Registry == nil {
			return nil, nil, fmt.Errorf("proxy: no plugin registry to open %s", o.Config)
		}
		srv, err := pipeline.LoadServer(ctx, o.Config, o.Registry, pipeline.Options{})
		if err != nil {
			return nil, nil, err
		}
		if o.OnConfig != nil {
			o.OnConfig(srv)
		}
		cfg.Replay = cfg.Replay || srv.Proxy.Replay
		cfg.RecordReplays = cfg.RecordReplays || srv.Proxy.RecordReplays
		cfg.Name = srv.Proxy.Name
		var opts []run.PrepareOption
		if cfg.Replay {
			opts = append(opts, run.WithoutCredentials())
		}
		// The provider chain logs upstream errors, which may quote a key.
		var keys []string
		for _, spec := range srv.Pipeline.Providers {
			if spec.APIKeyEnv != "" {
				keys = append(keys, os.Getenv(spec.APIKeyEnv))
			}
		}
		logger := o.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger = newScrubLogger(logger, newScrubber(append(keys, o.Secrets...)))
		ps, err := run.OpenProviders(ctx, srv.Pipeline, o.Registry, logger, opts...)
		if err != nil {
			return nil, nil, err
		}
		cfg.Providers, cfg.Prices = ps.Providers, ps.Prices
		cfg.Upstreams, keys = NewUpstreams(srv.Pipeline, ps.Providers)
		cfg.Secrets = append(cfg.Secrets, keys...)
		closer = ps.Close
	}
	p, err := New(cfg)
	if err != nil {
		closer(ctx)
		return nil, nil, err
	}
	return p, closer, nil
}
