package sdk

import (
	"context"
	"fmt"
	"slices"
)

// RoundTripper carries one encoded request envelope to a plugin and brings
// back its response envelope. It must not keep request, nor use it, once
// RoundTrip has returned: the client encodes its next request into the same
// memory.
type RoundTripper interface {
	RoundTrip(ctx context.Context, request []byte) ([]byte, error)
}

// wire is a plugin on the far side of a RoundTripper, with its Describe
// answer. The kind-typed clients embed it.
type wire struct {
	name  string
	rt    RoundTripper
	info  Info
	binds *binder // navigator bindings, used when info.Bind
	// api2 is set when the plugin's Describe answer lists APIBinary: the
	// hot methods then travel as MessagePack.
	api2 bool
}

func newWire(name string, rt RoundTripper, info Info) wire {
	return wire{name: name, rt: rt, info: info, binds: &binder{}, api2: slices.Contains(info.APIs, APIBinary)}
}

// Describe returns the plugin's Describe answer.
func (w *wire) Describe() Info { return w.info }

// NavigatorClient is a navigator plugin on the far side of a RoundTripper:
// it implements Navigator (and only Navigator) by encoding each call as a
// wire envelope. Make one with NewNavigatorClient or NewKindClient, which
// refuse a plugin that is not a navigator.
//
// When the plugin's Info has Bind, Start, Next and Boundary bind the
// routine and strategy once (navigator.bind) and then send only the
// tokens, the sequence, the call's own fields and the variables that
// changed (navigator.bound.*); a plugin that lost a binding is re-bound
// and the call resent. The client recognises a strategy by its map's
// identity, so a caller must not modify an Env.Strategy map it has passed
// (the host builds a new map for a new strategy). See PROTOCOL.md,
// "Binding".
type NavigatorClient struct{ wire }

// ProviderClient is a provider plugin on the far side of a RoundTripper: it
// implements Provider and nothing else. See NewProviderClient.
type ProviderClient struct{ wire }

// EmbedderClient is a provider plugin that embeds (its Info has Embed) on
// the far side of a RoundTripper: it implements Embedder, so the host's
// type assertion finds the ability across the wire as it does in a
// builtin. NewKindClient returns one for such a plugin.
type EmbedderClient struct{ ProviderClient }

// GateClient is a gate plugin on the far side of a RoundTripper: it
// implements Gate and nothing else. See NewGateClient.
type GateClient struct{ wire }

// ToolClient is a tool plugin on the far side of a RoundTripper: it
// implements Tool and nothing else. See NewToolClient.
type ToolClient struct{ wire }

// Client is the untyped wire client: it implements Gate, Provider,
// Navigator and Tool whatever the plugin is, and so checks nothing. The host never
// hands one out (it holds the kind-typed clients); it is kept for tests
// that push raw calls at a plugin, such as a transport's own tests.
type Client struct{ wire }

var (
	_ Navigator = (*NavigatorClient)(nil)
	_ Provider  = (*ProviderClient)(nil)
	_ Embedder  = (*EmbedderClient)(nil)
	_ Gate      = (*GateClient)(nil)
	_ Tool      = (*ToolClient)(nil)

	_ Gate      = (*Client)(nil)
	_ Provider  = (*Client)(nil)
	_ Embedder  = (*Client)(nil)
	_ Navigator = (*Client)(nil)
	_ Tool      = (*Client)(nil)
)

// KindError reports a plugin used as a kind it is not: a gate named as a
// routine's navigator, a navigator named as a provider, or a plugin whose
// Describe answer disagrees with what its manifest promised.
type KindError struct {
	// Plugin is the plugin's name.
	Plugin string
	// Kind is what the plugin is (its Describe answer, or its manifest).
	Kind Kind
	// Want is the kind the use needs.
	Want Kind
}

func (e *KindError) Error() string {
	return fmt.Sprintf("plugin %q is a %s, not a %s", e.Plugin, e.Kind, e.Want)
}

// Is makes errors.Is(err, ErrInvalid) match: using a plugin as the wrong
// kind is invalid input.
func (e *KindError) Is(target error) bool { return target == ErrInvalid }

// NewClient returns an untyped Client for the plugin called name behind
// rt; info is its Describe answer (see DescribeOver). Prefer NewKindClient.
func NewClient(name string, rt RoundTripper, info Info) *Client {
	return &Client{newWire(name, rt, info)}
}

// NewKindClient returns the kind-typed client (*NavigatorClient,
// *ProviderClient, *EmbedderClient, *GateClient or *ToolClient) for the
// plugin called name behind rt, whose Describe answer is info: a provider
// whose info has Embed gets an *EmbedderClient. When want is not empty and info.Kind is
// not want, it returns a *KindError naming the plugin and both kinds.
func NewKindClient(name string, rt RoundTripper, info Info, want Kind) (Plugin, error) {
	if want != "" && info.Kind != want {
		return nil, &KindError{Plugin: name, Kind: info.Kind, Want: want}
	}
	w := newWire(name, rt, info)
	switch info.Kind {
	case KindNavigator:
		return &NavigatorClient{w}, nil
	case KindProvider:
		if info.Embed {
			return &EmbedderClient{ProviderClient{w}}, nil
		}
		return &ProviderClient{w}, nil
	case KindGate:
		return &GateClient{w}, nil
	case KindTool:
		return &ToolClient{w}, nil
	}
	return nil, fmt.Errorf("plugin %q: unknown kind %q (want navigator, provider, gate or tool)", name, info.Kind)
}

// dial asks the plugin behind rt to Describe itself and makes the client of
// kind want, refusing a plugin of another kind.
func dial(ctx context.Context, name string, rt RoundTripper, want Kind) (Plugin, error) {
	info, err := DescribeOver(ctx, name, rt)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: describe: %w", name, err)
	}
	return NewKindClient(name, rt, info, want)
}

// NewNavigatorClient asks the plugin behind rt to Describe itself and
// returns a NavigatorClient, or a *KindError when it is not a navigator.
func NewNavigatorClient(ctx context.Context, name string, rt RoundTripper) (*NavigatorClient, error) {
	p, err := dial(ctx, name, rt, KindNavigator)
	if err != nil {
		return nil, err
	}
	return p.(*NavigatorClient), nil
}

// NewProviderClient asks the plugin behind rt to Describe itself and
// returns a *ProviderClient, or an *EmbedderClient when it embeds, or a
// *KindError when it is not a provider.
func NewProviderClient(ctx context.Context, name string, rt RoundTripper) (Provider, error) {
	p, err := dial(ctx, name, rt, KindProvider)
	if err != nil {
		return nil, err
	}
	return p.(Provider), nil
}

// NewGateClient asks the plugin behind rt to Describe itself and returns a
// GateClient, or a *KindError when it is not a gate.
func NewGateClient(ctx context.Context, name string, rt RoundTripper) (*GateClient, error) {
	p, err := dial(ctx, name, rt, KindGate)
	if err != nil {
		return nil, err
	}
	return p.(*GateClient), nil
}

// NewToolClient asks the plugin behind rt to Describe itself and returns a
// ToolClient, or a *KindError when it is not a tool plugin.
func NewToolClient(ctx context.Context, name string, rt RoundTripper) (*ToolClient, error) {
	p, err := dial(ctx, name, rt, KindTool)
	if err != nil {
		return nil, err
	}
	return p.(*ToolClient), nil
}

// DescribeOver asks the plugin behind rt for its Info.
func DescribeOver(ctx context.Context, name string, rt RoundTripper) (Info, error) {
	var info Info
	err := roundTrip(ctx, name, rt, MethodDescribe, struct{}{}, &info)
	return info, err
}

func roundTrip(ctx context.Context, name string, rt RoundTripper, method string, params, result any) error {
	req, err := EncodeRequest(method, params)
	if err != nil {
		return fmt.Errorf("plugin %q: %w", name, err)
	}
	resp, err := rt.RoundTrip(ctx, req)
	if err != nil {
		return err // transports name the plugin and the fault
	}
	if err := DecodeResponse(resp, result); err != nil {
		return responseError(name, method, err)
	}
	return nil
}

// responseError names the plugin in an error decoded from, or met while
// decoding, a response envelope.
func responseError(name, method string, err error) error {
	if e, ok := err.(*Error); ok {
		if e.Code == CodeInvalid && len(e.Problems) > 0 {
			return e // positioned problems already say where
		}
		return &pluginError{name: name, err: e} // errors.Is/As still reach e
	}
	return fmt.Errorf("plugin %q: %s: %w", name, method, err)
}

func remote[Req, Resp any](ctx context.Context, w *wire, method string, req *Req) (*Resp, error) {
	out := new(Resp)
	if err := roundTrip(ctx, w.name, w.rt, method, req, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Check implements Gate.
func (c *GateClient) Check(ctx context.Context, r *Comparison) (*Verdict, error) {
	return remote2(ctx, &c.wire, MethodCheck, r, &checkCodec)
}

// Chat implements Provider.
func (c *ProviderClient) Chat(ctx context.Context, r *ChatRequest) (*ChatResponse, error) {
	return remote2(ctx, &c.wire, MethodChat, r, &chatCodec)
}

// Embed implements Embedder.
func (c *EmbedderClient) Embed(ctx context.Context, r *EmbedRequest) (*EmbedResponse, error) {
	return embedOver(ctx, &c.wire, r)
}

// embedOver calls provider.embed (api 1 only: it is not a hot method). An
// answer over MaxEmbedResponse is refused before it is decoded; what is
// decoded is checked by the host (CheckEmbedding), as a builtin's is.
func embedOver(ctx context.Context, w *wire, r *EmbedRequest) (*EmbedResponse, error) {
	req, err := EncodeRequest(MethodEmbed, r)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", w.name, err)
	}
	resp, err := w.rt.RoundTrip(ctx, req)
	if err != nil {
		return nil, err // transports name the plugin and the fault
	}
	if len(resp) > MaxEmbedResponse {
		return nil, fmt.Errorf("plugin %q: %s: answer of %d bytes is over the %d-byte limit", w.name, MethodEmbed, len(resp), MaxEmbedResponse)
	}
	out := new(EmbedResponse)
	if err := DecodeResponse(resp, out); err != nil {
		return nil, responseError(w.name, MethodEmbed, err)
	}
	return out, nil
}

// ListTools implements Tool.
func (c *ToolClient) ListTools(ctx context.Context) ([]ToolSpec, error) {
	return listOver(ctx, &c.wire)
}

// CallTool implements Tool.
func (c *ToolClient) CallTool(ctx context.Context, r *ToolCallRequest) (*ToolResult, error) {
	return remote2(ctx, &c.wire, MethodToolCall, r, &toolCallCodec)
}

// listOver calls tool.list.
func listOver(ctx context.Context, w *wire) ([]ToolSpec, error) {
	out, err := remote2(ctx, w, MethodToolList, &ToolListRequest{}, &toolListCodec)
	if err != nil {
		return nil, err
	}
	return out.Tools, nil
}

// Load implements Navigator.
func (c *NavigatorClient) Load(ctx context.Context, r *LoadRequest) (*Routine, error) {
	return c.load(ctx, r)
}

// Start implements Navigator.
func (c *NavigatorClient) Start(ctx context.Context, r *StartRequest) (*Decision, error) {
	return c.start(ctx, r)
}

// Next implements Navigator.
func (c *NavigatorClient) Next(ctx context.Context, r *NextRequest) (*Decision, error) {
	return c.next(ctx, r)
}

// Boundary implements Navigator.
func (c *NavigatorClient) Boundary(ctx context.Context, r *BoundaryRequest) (*Decision, error) {
	return c.boundary(ctx, r)
}

// IO implements Navigator.
func (c *NavigatorClient) IO(ctx context.Context, r *IORequest) (*NodeIO, error) {
	return remote[IORequest, NodeIO](ctx, &c.wire, MethodIO, r)
}

// Check implements Gate.
func (c *Client) Check(ctx context.Context, r *Comparison) (*Verdict, error) {
	return remote2(ctx, &c.wire, MethodCheck, r, &checkCodec)
}

// Chat implements Provider.
func (c *Client) Chat(ctx context.Context, r *ChatRequest) (*ChatResponse, error) {
	return remote2(ctx, &c.wire, MethodChat, r, &chatCodec)
}

// Embed implements Embedder.
func (c *Client) Embed(ctx context.Context, r *EmbedRequest) (*EmbedResponse, error) {
	return embedOver(ctx, &c.wire, r)
}

// ListTools implements Tool.
func (c *Client) ListTools(ctx context.Context) ([]ToolSpec, error) {
	return listOver(ctx, &c.wire)
}

// CallTool implements Tool.
func (c *Client) CallTool(ctx context.Context, r *ToolCallRequest) (*ToolResult, error) {
	return remote2(ctx, &c.wire, MethodToolCall, r, &toolCallCodec)
}

// Load implements Navigator.
func (c *Client) Load(ctx context.Context, r *LoadRequest) (*Routine, error) {
	return c.load(ctx, r)
}

// Start implements Navigator.
func (c *Client) Start(ctx context.Context, r *StartRequest) (*Decision, error) {
	return c.start(ctx, r)
}

// Next implements Navigator.
func (c *Client) Next(ctx context.Context, r *NextRequest) (*Decision, error) {
	return c.next(ctx, r)
}

// Boundary implements Navigator.
func (c *Client) Boundary(ctx context.Context, r *BoundaryRequest) (*Decision, error) {
	return c.boundary(ctx, r)
}

// IO implements Navigator.
func (c *Client) IO(ctx context.Context, r *IORequest) (*NodeIO, error) {
	return remote[IORequest, NodeIO](ctx, &c.wire, MethodIO, r)
}

// pluginError names the plugin an error came from.
type pluginError struct {
	name string
	err  *Error
}

func (e *pluginError) Error() string { return fmt.Sprintf("plugin %q: %s", e.name, e.err.Error()) }
func (e *pluginError) Unwrap() error { return e.err }
