// Package sdk is the contract between the sextant host and its plugins, and
// the only package a plugin author imports.
//
// It holds the four plugin kinds (Navigator, Provider, Gate, Tool), the wire types
// they exchange with the host, the versioned wire envelope, and the
// registration and serving entry points that make one source build both as a
// native go-plugin subprocess and as a WebAssembly (wasip1, c-shared) module.
//
// A plugin is one import and a small main:
//
//	func init() { sdk.Register(myGate{}) }
//	func main() { sdk.Main() }
//
// Registration happens in init because a c-shared (reactor) WebAssembly build
// never runs main: only init functions and exported functions run there.
//
// The package must not import anything from the host.
package sdk

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// APIVersion is the version of the wire protocol this SDK speaks. The host
// refuses a plugin whose manifest or Describe answer names another version.
const APIVersion = 1

// Kind names what a plugin does.
type Kind string

// The plugin kinds.
const (
	KindNavigator Kind = "navigator"
	KindProvider  Kind = "provider"
	KindGate      Kind = "gate"
	KindTool      Kind = "tool"
)

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool {
	return k == KindNavigator || k == KindProvider || k == KindGate || k == KindTool
}

// Info is a plugin's answer to Describe.
type Info struct {
	// Name is unique among installed plugins; pipelines refer to plugins by it.
	Name string `json:"name"`
	// Kind is navigator, provider, gate or tool.
	Kind Kind `json:"kind"`
	// Version is the plugin's own semantic version.
	Version string `json:"version"`
	// API is the wire protocol version the plugin speaks (APIVersion).
	API int `json:"api"`
	// APIs lists every wire version the plugin answers, when it answers
	// more than API: [1, 2] for a plugin that also takes the hot methods
	// in api 2 (APIBinary). Serve fills it in; a plugin's own Describe
	// leaves it empty.
	APIs []int `json:"apis,omitempty"`
	// Description is one line for `sextant plugins list`.
	Description string `json:"description,omitempty"`
	// Config declares the settings the plugin reads from its pipeline block.
	Config []ConfigField `json:"config,omitempty"`
	// Credentials says that the plugin (a provider) takes its API key by
	// reference: the host sends the credential's name in
	// Config[ConfigAPIKeyCredential] and the plugin asks HTTP to fill it
	// into a header (HTTPRequest.Credentials), so the key itself never
	// crosses the wire and never enters a wasm sandbox. A plugin without it
	// (any api 1 plugin built before credentials existed) receives the key
	// in Config[ConfigAPIKey] with every call, as before.
	Credentials bool `json:"credentials,omitempty"`
	// Bind says that the plugin (a navigator) answers navigator.bind and
	// the navigator.bound.* methods, so that the host sends the routine's
	// strategy once and each call only what changed (PROTOCOL.md,
	// "Binding"). Serve sets it for every Navigator; a plugin without it
	// (any built before binding existed) gets whole requests, as before.
	Bind bool `json:"bind,omitempty"`
	// OutputBlind says that the plugin (a navigator) never reads
	// Outcome.Output, so the host leaves it out of navigator.next and
	// navigator.bound.next requests. Serve sets it for a Navigator that
	// implements OutputBlind and answers true; a plugin without it gets
	// the output, as before.
	OutputBlind bool `json:"output_blind,omitempty"`
	// Embed says that the plugin (a provider) answers provider.embed:
	// it turns texts into vectors (Embedder), so a pipeline's similar
	// assertions may name it. Serve sets it exactly when the Provider
	// implements Embedder; a plugin without it is never sent the method.
	Embed bool `json:"embed,omitempty"`
}

// ConfigField declares one setting a plugin accepts.
type ConfigField struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // string | number | bool | duration | list | table
	Default  any    `json:"default,omitempty"`
	Required bool   `json:"required,omitempty"`
	Doc      string `json:"doc,omitempty"`
}

// Plugin is what every plugin implements, whatever its kind.
type Plugin interface {
	// Describe returns the plugin's identity. It must not block and must
	// return the same value on every call.
	Describe() Info
}

// ValidName reports whether name is an acceptable plugin name: lowercase
// letters and digits, words joined by '-' or '_'.
//
// It matches ^[a-z][a-z0-9]*([-_][a-z0-9]+)*$, written out so that every
// plugin, the wasm ones included, does without package regexp and without
// compiling the expression when it starts.
func ValidName(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	sep := false // the previous byte was '-' or '_'
	for i := 1; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			sep = false
		case (c == '-' || c == '_') && !sep:
			sep = true
		default:
			return false
		}
	}
	return !sep
}

// CheckInfo reports the first problem with an Info that the host would refuse.
func CheckInfo(info Info) error {
	switch {
	case !ValidName(info.Name):
		return fmt.Errorf("invalid plugin name %q (want lowercase words joined by - or _)", info.Name)
	case !info.Kind.Valid():
		return fmt.Errorf("plugin %q: unknown kind %q (want navigator, provider, gate or tool)", info.Name, info.Kind)
	case info.API != APIVersion:
		return fmt.Errorf("plugin %q: api version %d, host speaks %d", info.Name, info.API, APIVersion)
	case info.Version == "":
		return fmt.Errorf("plugin %q: empty version", info.Name)
	}
	return nil
}

// kindOf reports the kind a plugin value implements, checking the interface
// that Describe claims.
func kindOf(p Plugin) (Kind, error) {
	info := p.Describe()
	ok := false
	switch info.Kind {
	case KindNavigator:
		_, ok = p.(Navigator)
	case KindProvider:
		_, ok = p.(Provider)
	case KindGate:
		_, ok = p.(Gate)
	case KindTool:
		_, ok = p.(Tool)
	default:
		return "", fmt.Errorf("plugin %q: unknown kind %q", info.Name, info.Kind)
	}
	if !ok {
		return "", fmt.Errorf("plugin %q: describes itself as a %s but does not implement sdk.%s", info.Name, info.Kind, kindInterface(info.Kind))
	}
	return info.Kind, nil
}

func kindInterface(k Kind) string {
	switch k {
	case KindNavigator:
		return "Navigator"
	case KindProvider:
		return "Provider"
	case KindTool:
		return "Tool"
	}
	return "Gate"
}

var (
	regMu    sync.RWMutex
	registry = map[string]Plugin{}
)

// Register makes p available: to the host as a builtin when the package is
// linked into sextant, and to Main (or the WebAssembly exports) when it is
// built as a plugin binary. Call it from init.
//
// Register panics when p's Describe answer is invalid, when p does not
// implement the interface of its kind, or when the name is already taken, so
// that a clash shows at start-up rather than at the first call.
func Register(p Plugin) {
	info := p.Describe()
	if err := CheckInfo(info); err != nil {
		panic("sdk.Register: " + err.Error())
	}
	if _, err := kindOf(p); err != nil {
		panic("sdk.Register: " + err.Error())
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[info.Name]; dup {
		panic(fmt.Sprintf("sdk.Register: plugin %q registered twice", info.Name))
	}
	registry[info.Name] = p
}

// Registered returns every registered plugin, sorted by name.
func Registered() []Plugin {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Plugin, 0, len(registry))
	for _, p := range registry {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Describe().Name < out[j].Describe().Name })
	return out
}

// only returns the single plugin a plugin binary serves.
func only() (Plugin, error) {
	ps := Registered()
	switch len(ps) {
	case 0:
		return nil, fmt.Errorf("no plugin registered: call sdk.Register from an init function")
	case 1:
		return ps[0], nil
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Describe().Name
	}
	return nil, fmt.Errorf("a plugin binary serves one plugin, %d are registered: %v", len(ps), names)
}

// Handler answers encoded requests for one plugin; it is what every wire
// transport carries. See Serve.
type Handler interface {
	// Handle decodes one request envelope, calls the plugin and returns the
	// encoded response envelope. It never returns a Go error: failures are
	// encoded in the envelope.
	Handle(ctx context.Context, request []byte) []byte
}
