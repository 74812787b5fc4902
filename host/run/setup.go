package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/pipeline"
	"github.com/sextant-dev/sextant/host/plugin"
	"github.com/sextant-dev/sextant/host/strategy"
	"github.com/sextant-dev/sextant/plugins/script"
	"github.com/sextant-dev/sextant/sdk"
)

// Prepared is a loaded pipeline with its plugins open, ready to run.
type Prepared struct {
	Pipeline  *pipeline.Pipeline
	Strategy  *strategy.Strategy
	Navigator sdk.Navigator
	Routine   *sdk.Routine
	Providers *Providers
	Prices    Prices

	handles []*plugin.Handle
}

// Close releases the plugins.
func (p *Prepared) Close(ctx context.Context) {
	for _, h := range p.handles {
		h.Close(ctx)
	}
	p.handles = nil
}

// PrepareOption changes how Prepare opens a pipeline.
type PrepareOption func(*prepareOptions)

type prepareOptions struct {
	withoutCredentials bool
}

// WithoutCredentials prepares a pipeline that will be replayed, not run:
// a provider whose api_key_env variable is unset does not stop Prepare;
// a call that reaches the provider anyway fails, naming the variable.
// Replay, gate and evolve use it unless on_miss = "live".
func WithoutCredentials() PrepareOption {
	return func(o *prepareOptions) { o.withoutCredentials = true }
}

// Prepare loads the pipeline at path (every problem at once, nothing run),
// its strategy, opens its navigator and providers through reg, and loads
// the routine.
//
// Each provider plugin is opened once, as a provider (a plugin of another
// kind is refused, naming both kinds), with the API keys of every block
// that uses it bound to it (plugin.Grant.Credentials); each block's
// configuration is bound host-side to its Provider (see bindProvider).
func Prepare(ctx context.Context, path string, reg *plugin.Registry, logger *slog.Logger, opts ...PrepareOption) (*Prepared, error) {
	if logger == nil {
		logger = slog.Default()
	}
	var o prepareOptions
	for _, opt := range opts {
		opt(&o)
	}
	p, err := pipeline.Load(ctx, path, reg, pipeline.Options{CheckStrategy: func(f string) error {
		_, err := strategy.Load(f)
		return err
	}})
	if err != nil {
		return nil, err
	}
	st, err := strategy.Load(p.Path(p.Strategy.File))
	if err != nil {
		return nil, err
	}
	keys, err := credentials(p, o.withoutCredentials)
	if err != nil {
		return nil, err
	}
	out := &Prepared{Pipeline: p, Strategy: st}
	ok := false
	defer func() {
		if !ok {
			out.Close(context.WithoutCancel(ctx))
		}
	}()
	h, err := reg.OpenKind(ctx, p.Routine.Navigator, sdk.KindNavigator, grant(p, p.Routine.Navigator))
	if err != nil {
		return nil, fmt.Errorf("routine.navigator: %w", err)
	}
	out.handles = append(out.handles, h)
	nav, err := h.Navigator()
	if err != nil {
		return nil, fmt.Errorf("routine.navigator: %w", err)
	}
	data, err := os.ReadFile(p.Path(p.Routine.File))
	if err != nil {
		return nil, err
	}
	if out.Routine, err = nav.Load(ctx, &sdk.LoadRequest{Name: p.Path(p.Routine.File), Routine: data}); err != nil {
		return nil, err
	}
	out.Navigator = nav
	var provs []*Provider
	opened := map[string]sdk.Provider{}
	for _, name := range sortedNames(p.Providers) {
		spec := p.Providers[name]
		prov, ok := opened[spec.Use]
		if !ok {
			g := grant(p, spec.Use)
			g.Credentials = keys.bound(p, spec.Use)
			h, err := reg.OpenKind(ctx, spec.Use, sdk.KindProvider, g)
			if err != nil {
				return nil, fmt.Errorf("providers.%s.use: %w", name, err)
			}
			out.handles = append(out.handles, h)
			if prov, err = h.Provider(); err != nil {
				return nil, fmt.Errorf("providers.%s.use: %w", name, err)
			}
			opened[spec.Use] = prov
		}
		cfg, err := providerConfig(p, spec)
		if err != nil {
			return nil, err
		}
		provs = append(provs, &Provider{Name: name, Plugin: bindProvider(name, prov, cfg, spec.APIKeyEnv, keys[spec.APIKeyEnv]),
			Config: cfg, Model: spec.Model, Temperature: spec.Temperature,
			MaxTokens: spec.MaxTokens, Timeout: spec.Timeout.Std(), Retries: spec.Retries, Fallback: spec.Fallback})
	}
	out.Providers = NewProviders(logger, provs...)
	overrides := map[string]Price{}
	for m, pr := range p.Prices {
		overrides[m] = Price{Input: pr.Input, Output: pr.Output}
	}
	out.Prices = DefaultPrices().With(overrides)
	ok = true
	return out, nil
}

// providerConfig is the Config sent with each request: the block's config
// table, base_url and the scripted provider's rules text. It holds no
// secret; bindProvider adds the API key's reference (or, for a plugin that
// predates credentials, the key).
func providerConfig(p *pipeline.Pipeline, spec pipeline.Provider) (map[string]any, error) {
	cfg := map[string]any{}
	for k, v := range spec.Config {
		cfg[k] = v
	}
	if spec.BaseURL != "" {
		cfg["base_url"] = spec.BaseURL
	}
	if spec.Rules != "" {
		path := p.Path(spec.Rules)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("provider rules: %w", errors.Unwrap(err))
		}
		cfg[script.ConfigRules] = string(b)
		cfg[script.ConfigRulesFile] = filepath.ToSlash(path)
	}
	return cfg, nil
}

func grant(p *pipeline.Pipeline, name string) plugin.Grant {
	g, ok := p.Plugins[name]
	if !ok {
		return plugin.Grant{}
	}
	mem, _ := plugin.ParseSize(g.Memory)
	return plugin.Grant{AllowHTTP: g.AllowHTTP, Timeout: g.Timeout.Std(), Memory: mem, Pool: g.Pool}
}

func sortedNames(m map[string]pipeline.Provider) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

// Runner returns a runner for the prepared pipeline over st.
func (p *Prepared) Runner(cfg Config) *Runner {
	cfg.Pipeline, cfg.Navigator, cfg.Routine, cfg.Strategy, cfg.Providers, cfg.Prices =
		p.Pipeline, p.Navigator, p.Routine, p.Strategy, p.Providers, p.Prices
	return NewRunner(cfg)
}
