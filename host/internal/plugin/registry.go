package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

// Grant is what a pipeline allows one plugin ([plugins.NAME]).
type Grant struct {
	// AllowHTTP lists host:port pairs the plugin may reach (wasm http function).
	AllowHTTP []string
	// Timeout bounds each call; 0 means the transport default.
	Timeout time.Duration
	// Memory caps the plugin's memory in bytes; 0 means the manifest's
	// request or the transport default.
	Memory uint64
	// Pool is the number of wasm instances (one per worker); 0 means 1.
	Pool int
	// Credentials maps credential names (the api_key_env variable a
	// provider block names) to their secrets. They are bound to the plugin
	// once, when it is opened: the wasm transport keeps them host-side and
	// fills them into the headers of the plugin's http calls that ask for
	// them; the process transport puts them in the child's environment.
	// They never travel in a call. See sdk/PROTOCOL.md, "Credentials".
	Credentials map[string]string
}

// Dialer opens a wire connection to the plugin described by m.
type Dialer func(ctx context.Context, m *Manifest, g Grant) (Conn, error)

// Registry resolves plugin names to opened plugins over their transport.
type Registry struct {
	entries []Entry
	dialers map[string]Dialer
	logger  *slog.Logger
}

// Option configures a Registry.
type Option func(*Registry)

// WithDialer sets the dialer for a transport ("wasm" or "process").
func WithDialer(transport string, d Dialer) Option {
	return func(r *Registry) { r.dialers[transport] = d }
}

// WithLogger sets the logger used for warnings (unpinned plugins).
func WithLogger(l *slog.Logger) Option {
	return func(r *Registry) { r.logger = l }
}

// NewRegistry returns a registry over entries (from Discover).
func NewRegistry(entries []Entry, opts ...Option) *Registry {
	r := &Registry{entries: entries, dialers: map[string]Dialer{}, logger: slog.Default()}
	for _, o := range opts {
		o(r)
	}
	if r.logger.Enabled(context.Background(), slog.LevelDebug) {
		for _, e := range entries {
			r.logger.Debug("plugin found", "plugin", e.Name, "kind", e.Kind, "transport", e.Transport, "source", e.Source)
		}
	}
	return r
}

// Entries returns every resolvable plugin, sorted by name.
func (r *Registry) Entries() []Entry { return r.entries }

// Lookup finds a plugin by name.
func (r *Registry) Lookup(name string) (Entry, bool) {
	i := sort.Search(len(r.entries), func(i int) bool { return r.entries[i].Name >= name })
	if i < len(r.entries) && r.entries[i].Name == name {
		return r.entries[i], true
	}
	return Entry{}, false
}

// Names lists the names of plugins of kind k ("" for all).
func (r *Registry) Names(k sdk.Kind) []string {
	var out []string
	for _, e := range r.entries {
		if k == "" || e.Kind == k {
			out = append(out, e.Name)
		}
	}
	return out
}

// UnknownError reports a name that resolves to nothing, with a near miss.
func (r *Registry) UnknownError(name string, k sdk.Kind) error {
	what := "plugin"
	if k != "" {
		what = string(k) + " plugin"
	}
	return sdk.Errorf(sdk.CodeInvalid, "unknown %s %q%s", what, name, suggest.Hint(name, r.Names(k)))
}

// Handle is an opened plugin.
type Handle struct {
	Entry Entry
	// Plugin is the plugin as the sdk interface of its kind: a builtin
	// itself (a tool plugin guarded: see Handle.Tool), or a kind-typed
	// client (NavigatorClient, ProviderClient, GateClient, ToolClient)
	// that implements its kind's interface and no other, but for the
	// optional abilities its Describe answer declares (EmbedderClient).
	Plugin sdk.Plugin
	closer func(context.Context) error
}

// Navigator returns the plugin as a navigator, or an *sdk.KindError naming
// the plugin and both kinds.
func (h *Handle) Navigator() (sdk.Navigator, error) {
	if n, ok := h.Plugin.(sdk.Navigator); ok && h.Entry.Kind == sdk.KindNavigator {
		return n, nil
	}
	return nil, &sdk.KindError{Plugin: h.Entry.Name, Kind: h.Entry.Kind, Want: sdk.KindNavigator}
}

// Provider returns the plugin as a provider, or an *sdk.KindError.
func (h *Handle) Provider() (sdk.Provider, error) {
	if p, ok := h.Plugin.(sdk.Provider); ok && h.Entry.Kind == sdk.KindProvider {
		return p, nil
	}
	return nil, &sdk.KindError{Plugin: h.Entry.Name, Kind: h.Entry.Kind, Want: sdk.KindProvider}
}

// Gate returns the plugin as a gate, or an *sdk.KindError.
func (h *Handle) Gate() (sdk.Gate, error) {
	if g, ok := h.Plugin.(sdk.Gate); ok && h.Entry.Kind == sdk.KindGate {
		return g, nil
	}
	return nil, &sdk.KindError{Plugin: h.Entry.Name, Kind: h.Entry.Kind, Want: sdk.KindGate}
}

// Tool returns the plugin as a tool plugin, or an *sdk.KindError. Over
// every transport its errors name it, its list is checked (CheckTools)
// and a result over MaxToolResult is an error; a builtin's panic is an
// error too.
func (h *Handle) Tool() (sdk.Tool, error) {
	if t, ok := h.Plugin.(sdk.Tool); ok && h.Entry.Kind == sdk.KindTool {
		return t, nil
	}
	return nil, &sdk.KindError{Plugin: h.Entry.Name, Kind: h.Entry.Kind, Want: sdk.KindTool}
}

// Close releases the plugin's instances or subprocess.
func (h *Handle) Close(ctx context.Context) error {
	if h.closer == nil {
		return nil
	}
	return h.closer(ctx)
}

// Open resolves name and opens it over its transport, whatever its kind.
// See OpenKind.
func (r *Registry) Open(ctx context.Context, name string, g Grant) (*Handle, error) {
	return r.OpenKind(ctx, name, "", g)
}

// OpenKind resolves name and opens it over its transport as a plugin of
// kind want ("" for any). A plugin of another kind is refused before it is
// started, with an *sdk.KindError naming the plugin and both kinds. For
// wasm and process plugins it verifies the checksum before loading, asks
// the plugin to Describe itself and checks that the answer agrees with the
// manifest (name, kind, api version); the Handle's Plugin is then the
// kind-typed client of the kind the plugin declared.
func (r *Registry) OpenKind(ctx context.Context, name string, want sdk.Kind, g Grant) (*Handle, error) {
	e, ok := r.Lookup(name)
	if !ok {
		return nil, r.UnknownError(name, want)
	}
	if want != "" && e.Kind != want {
		return nil, &sdk.KindError{Plugin: name, Kind: e.Kind, Want: want}
	}
	if e.Builtin != nil {
		r.logger.Debug("plugin opened", "plugin", name, "kind", e.Kind, "transport", e.Transport, "source", e.Source)
		p := e.Builtin
		if t, ok := p.(sdk.Tool); ok && e.Kind == sdk.KindTool {
			p = builtinTool{name: name, t: t, logger: r.logger}
		}
		return &Handle{Entry: e, Plugin: p}, nil
	}
	start := time.Now()
	m := e.Manifest
	if err := VerifyChecksum(m); err != nil {
		return nil, err
	}
	if m.Artifact().SHA256 == "" {
		r.logger.Warn("plugin checksum not pinned; pin it with `sextant plugins verify --pin`", "plugin", m.Name, "manifest", m.Path)
	}
	d := r.dialers[e.Transport]
	if d == nil {
		return nil, fmt.Errorf("plugin %q: %s transport not available in this host", name, e.Transport)
	}
	if g.Memory == 0 {
		g.Memory = m.MemoryLimit()
	}
	g.AllowHTTP = grantedHTTP(m.Requests.HTTP, g.AllowHTTP)
	conn, err := d(ctx, m, g)
	if err != nil {
		return nil, err
	}
	info, err := Describe(ctx, name, conn)
	if err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("plugin %q: describe: %w", name, err)
	}
	if err := agree(m, info); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	c, err := NewKindClient(name, conn, info, want)
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	r.logger.Debug("plugin opened", "plugin", name, "kind", e.Kind, "transport", e.Transport, "source", e.Source,
		"version", info.Version, "checksum", e.Checksum, "took", time.Since(start))
	return &Handle{Entry: e, Plugin: c, closer: c.(closer).Close}, nil
}

// CredentialEnv is how a process plugin's credentials are bound, once, at
// start: each becomes a KEY=VALUE variable of the child's environment under
// its own name (the api_key_env the pipeline names), where sdk.HTTP looks
// for it. The result is sorted.
func CredentialEnv(creds map[string]string) []string {
	out := make([]string, 0, len(creds))
	for name, secret := range creds {
		out = append(out, name+"="+secret)
	}
	sort.Strings(out)
	return out
}

// grantedHTTP keeps the grants the manifest asked for: a pipeline can
// narrow a plugin's network reach but never widen it past its request.
func grantedHTTP(requested, granted []string) []string {
	var out []string
	for _, g := range granted {
		if slices.Contains(requested, g) {
			out = append(out, g)
		}
	}
	return out
}

// agree checks a plugin's Describe answer against its manifest.
func agree(m *Manifest, info sdk.Info) error {
	switch {
	case info.API != sdk.APIVersion:
		return fmt.Errorf("plugin %q: api version %d, host speaks %d", m.Name, info.API, sdk.APIVersion)
	case info.Name != m.Name:
		return fmt.Errorf("plugin %q: describes itself as %q (%s)", m.Name, info.Name, m.Path)
	case info.Kind != m.Kind:
		return fmt.Errorf("plugin %q: manifest %s says it is a %s, the plugin says it is a %s", m.Name, m.Path, m.Kind, info.Kind)
	}
	return nil
}

// Plugin reports the kind and declared config of the plugin called name.
// Config is known for builtins; for installed plugins it is read when the
// plugin is opened, so it is nil here.
func (r *Registry) Plugin(name string) (sdk.Kind, []sdk.ConfigField, bool) {
	e, ok := r.Lookup(name)
	if !ok {
		return "", nil, false
	}
	if e.Builtin != nil {
		return e.Kind, e.Builtin.Describe().Config, true
	}
	return e.Kind, nil, true
}

// LoadRoutine opens the navigator called navigator and loads the routine
// file (and the decision files it calls) with it, for validation. The
// navigator is closed again.
func (r *Registry) LoadRoutine(ctx context.Context, navigator, file string, decisions []sdk.File) (*sdk.Routine, error) {
	h, err := r.OpenKind(ctx, navigator, sdk.KindNavigator, Grant{})
	if err != nil {
		return nil, err
	}
	defer h.Close(context.WithoutCancel(ctx))
	nav, err := h.Navigator()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return nav.Load(ctx, &sdk.LoadRequest{Name: file, Routine: data, Decisions: decisions})
}
