package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/tool"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// Prepared is a loaded pipeline with its plugins open, ready to run.
type Prepared struct {
	Pipeline  *pipeline.Pipeline
	Strategy  *strategy.Strategy
	Navigator sdk.Navigator
	Routine   *sdk.Routine
	Providers *Providers
	Prices    Prices
	// Tools are the pipeline's tool sources, each started on first use
	// (nil when it declares none).
	Tools *tool.Set
	// Events reads the routine's timer definitions and conditions
	// (sdk.EventSemantics); nil when the routine has neither or no
	// builtin navigator reads them.
	Events sdk.EventSemantics

	handles []*plugin.Handle
}

// Close releases the plugins.
func (p *Prepared) Close(ctx context.Context) {
	if p.Tools != nil {
		if err := p.Tools.Close(); err != nil {
			slog.Default().Debug("tool sources closed with an error", "err", err)
		}
		p.Tools = nil
	}
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

// Loaded is a pipeline loaded and validated once, with its strategy and
// routine: what every run, replay worker and evolution probe of one
// command shares. Open makes a Prepared (plugins open) from it as often as
// needed; the navigator opened to validate the routine is handed to the
// first Open rather than closed and opened again. Close releases it when
// no Open took it.
type Loaded struct {
	Pipeline *pipeline.Pipeline
	Strategy *strategy.Strategy
	// Routine is the routine's summary from the navigator that validated it.
	Routine *sdk.Routine

	reg     *plugin.Registry
	logger  *slog.Logger
	routine []byte // the routine file, read once
	// decisions are the routine's decision files, read once with it.
	decisions []sdk.File

	mu  sync.Mutex
	nav *plugin.Handle // the validating navigator, until an Open takes it
}

// Load reads and validates the pipeline at path (every problem at once,
// nothing run), its strategy and its routine, each once: the routine is
// loaded by the pipeline's navigator opened through reg, which stays open
// for the first Open.
func Load(ctx context.Context, path string, reg *plugin.Registry, logger *slog.Logger) (*Loaded, error) {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Loaded{reg: reg, logger: logger}
	res := &keepingResolver{Registry: reg, l: l}
	p, err := pipeline.Load(ctx, path, res, pipeline.Options{CheckStrategy: func(f string) error {
		st, err := strategy.Load(f)
		l.Strategy = st
		return err
	}, CheckRules: rulesChecker(reg)})
	if err != nil {
		l.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	l.Pipeline = p
	switch {
	case p.Strategy.File == "": // no [strategy]: the empty one
		l.Strategy = strategy.Empty(p.Name)
	case l.Strategy == nil: // the loader checks the file only when it exists
		if l.Strategy, err = strategy.Load(p.Path(p.Strategy.File)); err != nil {
			l.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	if l.nav == nil { // a Resolver that did not load the routine: load it now
		decisions, err := p.Decisions()
		if err != nil {
			return nil, err
		}
		if err := res.load(ctx, p.Routine.Navigator, p.Path(p.Routine.File), decisions); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// keepingResolver is the registry as pipeline.Load's Resolver, except that
// LoadRoutine keeps the navigator it opened (and the routine it read) in
// the Loaded instead of closing it.
type keepingResolver struct {
	*plugin.Registry
	l *Loaded
}

func (r *keepingResolver) LoadRoutine(ctx context.Context, navigator, file string, decisions []sdk.File) (*sdk.Routine, error) {
	if err := r.load(ctx, navigator, file, decisions); err != nil {
		return nil, err
	}
	return r.l.Routine, nil
}

func (r *keepingResolver) load(ctx context.Context, navigator, file string, decisions []sdk.File) error {
	h, err := r.OpenKind(ctx, navigator, sdk.KindNavigator, plugin.Grant{})
	if err != nil {
		return err
	}
	nav, err := h.Navigator()
	if err != nil {
		h.Close(context.WithoutCancel(ctx))
		return err
	}
	data, err := readfile.Read(file, readfile.MaxRoutine)
	if err != nil {
		h.Close(context.WithoutCancel(ctx))
		return err
	}
	routine, err := nav.Load(ctx, &sdk.LoadRequest{Name: file, Routine: data, Decisions: decisions})
	if err != nil {
		h.Close(context.WithoutCancel(ctx))
		return err
	}
	r.l.Close(context.WithoutCancel(ctx)) // a second load replaces the first
	r.l.mu.Lock()
	r.l.nav, r.l.routine, r.l.decisions, r.l.Routine = h, data, decisions, routine
	r.l.mu.Unlock()
	return nil
}

// Close releases the navigator opened to validate the routine, unless an
// Open took it. The Prepared that Open returned are closed on their own.
func (l *Loaded) Close(ctx context.Context) {
	l.mu.Lock()
	h := l.nav
	l.nav = nil
	l.mu.Unlock()
	if h != nil {
		h.Close(ctx)
	}
}

// Prepare loads the pipeline at path (every problem at once, nothing run),
// its strategy and routine, and opens its navigator and providers through
// reg: Load, then Open. The navigator is opened once.
func Prepare(ctx context.Context, path string, reg *plugin.Registry, logger *slog.Logger, opts ...PrepareOption) (*Prepared, error) {
	l, err := Load(ctx, path, reg, logger)
	if err != nil {
		return nil, err
	}
	defer l.Close(context.WithoutCancel(ctx))
	return l.Open(ctx, opts...)
}

// Open opens the loaded pipeline's plugins for one worker: the first call
// takes the navigator that validated the routine (when the pipeline grants
// it nothing that validation did not have), later calls open their own and
// load the routine into it. It is safe for concurrent use.
//
// Each provider plugin is opened once, as a provider (a plugin of another
// kind is refused, naming both kinds), with the API keys of every block
// that uses it bound to it (plugin.Grant.Credentials); each block's
// configuration is bound host-side to its Provider (see bindProvider).
func (l *Loaded) Open(ctx context.Context, opts ...PrepareOption) (*Prepared, error) {
	var o prepareOptions
	for _, opt := range opts {
		opt(&o)
	}
	p := l.Pipeline
	keys, err := credentials(p, o.withoutCredentials)
	if !o.withoutCredentials {
		err = errors.Join(err, tool.CheckEnv(p, nil)) // what a live run's tool sources need, as its keys
	}
	if err != nil {
		return nil, err
	}
	out := &Prepared{Pipeline: p, Strategy: l.Strategy}
	ok := false
	defer func() {
		if !ok {
			out.Close(context.WithoutCancel(ctx))
		}
	}()
	g := grant(p, p.Routine.Navigator)
	var h *plugin.Handle
	if zeroGrant(g) {
		l.mu.Lock()
		h, l.nav = l.nav, nil
		l.mu.Unlock()
	}
	if h != nil {
		out.handles = append(out.handles, h)
		out.Navigator, _ = h.Navigator() // checked by Load
		out.Routine = l.Routine
	} else {
		h, err := l.reg.OpenKind(ctx, p.Routine.Navigator, sdk.KindNavigator, g)
		if err != nil {
			return nil, fmt.Errorf("routine.navigator: %w", err)
		}
		out.handles = append(out.handles, h)
		nav, err := h.Navigator()
		if err != nil {
			return nil, fmt.Errorf("routine.navigator: %w", err)
		}
		if out.Routine, err = nav.Load(ctx, &sdk.LoadRequest{Name: p.Path(p.Routine.File), Routine: l.routine, Decisions: l.decisions}); err != nil {
			return nil, err
		}
		out.Navigator = nav
	}
	ps, handles, err := openProviders(ctx, p, l.reg, l.logger, keys)
	out.handles = append(out.handles, handles...)
	if err != nil {
		return nil, err
	}
	out.Providers, out.Prices = ps.Providers, ps.Prices
	out.Tools = openTools(p, l.reg, l.logger)
	if needsEvents(out.Routine) {
		out.Events = eventSemantics(out.Navigator, p.Routine.Navigator)
	}
	ok = true
	return out, nil
}

// ProviderSet is a pipeline's (or a server's) providers, open, with its
// price table.
type ProviderSet struct {
	Providers *Providers
	Prices    Prices
	handles   []*plugin.Handle
}

// Close releases the providers' plugins.
func (s *ProviderSet) Close(ctx context.Context) {
	for _, h := range s.handles {
		h.Close(ctx)
	}
	s.handles = nil
}

// OpenProviders opens the [providers] blocks of p (a pipeline, or a
// server configuration loaded by pipeline.LoadServer) as Prepare does:
// each plugin once, API keys bound, and the price table with p's
// [prices] applied. An unset api_key_env variable is an error unless
// WithoutCredentials is given.
func OpenProviders(ctx context.Context, p *pipeline.Pipeline, reg *plugin.Registry, logger *slog.Logger, opts ...PrepareOption) (*ProviderSet, error) {
	if logger == nil {
		logger = slog.Default()
	}
	var o prepareOptions
	for _, opt := range opts {
		opt(&o)
	}
	keys, err := credentials(p, o.withoutCredentials)
	if err != nil {
		return nil, err
	}
	ps, handles, err := openProviders(ctx, p, reg, logger, keys)
	if err != nil {
		for _, h := range handles {
			h.Close(context.WithoutCancel(ctx))
		}
		return nil, err
	}
	ps.handles = handles
	return ps, nil
}

// openProviders opens p's providers; the handles it returns are the
// caller's to close, also on error.
func openProviders(ctx context.Context, p *pipeline.Pipeline, reg *plugin.Registry, logger *slog.Logger, keys keyring) (*ProviderSet, []*plugin.Handle, error) {
	var handles []*plugin.Handle
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
				return nil, handles, fmt.Errorf("providers.%s.use: %w", name, err)
			}
			handles = append(handles, h)
			if prov, err = h.Provider(); err != nil {
				return nil, handles, fmt.Errorf("providers.%s.use: %w", name, err)
			}
			opened[spec.Use] = prov
		}
		cfg, err := providerConfig(p, spec)
		if err != nil {
			return nil, handles, err
		}
		info := prov.Describe()
		base := spec.BaseURL
		for _, f := range info.Config {
			if d, ok := f.Default.(string); ok && f.Name == "base_url" && base == "" {
				base = d
			}
		}
		provs = append(provs, &Provider{Name: name, Plugin: bindProvider(name, prov, cfg, spec.APIKeyEnv, keys[spec.APIKeyEnv]),
			Config: cfg, Model: spec.Model, Temperature: spec.Temperature,
			MaxTokens: spec.MaxTokens, Timeout: spec.Timeout.Std(), Retries: spec.Retries, Fallback: spec.Fallback,
			System: info.Name, BaseURL: base})
	}
	ps := &ProviderSet{Providers: NewProviders(logger, provs...)}
	overrides := map[string]Price{}
	for m, pr := range p.Prices {
		overrides[m] = Price{Input: pr.Input, Output: pr.Output}
	}
	ps.Prices = DefaultPrices().With(overrides)
	return ps, handles, nil
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
		b, err := readfile.Prefix(path, tomlpos.MaxSize+1)
		if err != nil {
			return nil, fmt.Errorf("provider rules: %w", errors.Unwrap(err))
		}
		cfg[sdk.ConfigRules] = string(b)
		cfg[sdk.ConfigRulesFile] = filepath.ToSlash(path)
	}
	return cfg, nil
}

// rulesChecker checks a provider block's rules file at path when the
// pipeline is loaded, so that a mistake in it (a wrong type, a bad
// expression) stops the run before a task exists instead of failing the
// first step that asks the provider. The block's plugin (use) checks it
// when it is a builtin that implements sdk.RulesChecker (the scripted
// provider); any other sees its rules at its first call.
func rulesChecker(reg *plugin.Registry) func(use, path string) error {
	return func(use, path string) error {
		var c sdk.RulesChecker
		if e, ok := reg.Lookup(use); ok {
			c, _ = e.Builtin.(sdk.RulesChecker)
		}
		if c == nil {
			return nil
		}
		b, err := readfile.Prefix(path, tomlpos.MaxSize+1)
		if err != nil {
			return sdk.Invalid(sdk.Problem{File: path, Message: fmt.Sprintf("read rules: %v", errors.Unwrap(err))})
		}
		return c.CheckRules(filepath.ToSlash(path), b)
	}
}

// zeroGrant reports whether g grants nothing: then the navigator that
// validated the routine (opened with no grant) can run it.
func zeroGrant(g plugin.Grant) bool {
	return len(g.AllowHTTP) == 0 && g.Timeout == 0 && g.Memory == 0 && g.Pool == 0 && len(g.Credentials) == 0
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
	cfg.Tools, cfg.Events = p.Tools, p.Events
	return NewRunner(cfg)
}
