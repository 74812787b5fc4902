package sdk

import (
	"context"
	"fmt"
)

// RoundTripper carries one encoded request envelope to a plugin and brings
// back its response envelope.
type RoundTripper interface {
	RoundTrip(ctx context.Context, request []byte) ([]byte, error)
}

// Client is a plugin on the far side of a RoundTripper: it implements Gate,
// Provider and Navigator by encoding each call as a wire envelope. The host
// holds one for every wasm or process plugin; sdktest uses one to push a
// plugin through the wire in-process. Use it only as the kind Describe
// reports.
type Client struct {
	name string
	rt   RoundTripper
	info Info
}

var (
	_ Gate      = (*Client)(nil)
	_ Provider  = (*Client)(nil)
	_ Navigator = (*Client)(nil)
)

// NewClient returns a Client for the plugin called name behind rt; info is
// its Describe answer (see DescribeOver).
func NewClient(name string, rt RoundTripper, info Info) *Client {
	return &Client{name: name, rt: rt, info: info}
}

// DescribeOver asks the plugin behind rt for its Info.
func DescribeOver(ctx context.Context, name string, rt RoundTripper) (Info, error) {
	var info Info
	err := roundTrip(ctx, name, rt, MethodDescribe, struct{}{}, &info)
	return info, err
}

// Describe returns the plugin's Describe answer.
func (c *Client) Describe() Info { return c.info }

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
		if e, ok := err.(*Error); ok {
			if e.Code == CodeInvalid && len(e.Problems) > 0 {
				return e // positioned problems already say where
			}
			return &pluginError{name: name, err: e} // errors.Is/As still reach e
		}
		return fmt.Errorf("plugin %q: %s: %w", name, method, err)
	}
	return nil
}

func remote[Req, Resp any](ctx context.Context, c *Client, method string, req *Req) (*Resp, error) {
	out := new(Resp)
	if err := roundTrip(ctx, c.name, c.rt, method, req, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Check implements Gate.
func (c *Client) Check(ctx context.Context, r *Comparison) (*Verdict, error) {
	return remote[Comparison, Verdict](ctx, c, MethodCheck, r)
}

// Chat implements Provider.
func (c *Client) Chat(ctx context.Context, r *ChatRequest) (*ChatResponse, error) {
	return remote[ChatRequest, ChatResponse](ctx, c, MethodChat, r)
}

// Load implements Navigator.
func (c *Client) Load(ctx context.Context, r *LoadRequest) (*Routine, error) {
	return remote[LoadRequest, Routine](ctx, c, MethodLoad, r)
}

// Start implements Navigator.
func (c *Client) Start(ctx context.Context, r *StartRequest) (*Decision, error) {
	return remote[StartRequest, Decision](ctx, c, MethodStart, r)
}

// Next implements Navigator.
func (c *Client) Next(ctx context.Context, r *NextRequest) (*Decision, error) {
	return remote[NextRequest, Decision](ctx, c, MethodNext, r)
}

// Boundary implements Navigator.
func (c *Client) Boundary(ctx context.Context, r *BoundaryRequest) (*Decision, error) {
	return remote[BoundaryRequest, Decision](ctx, c, MethodBoundary, r)
}

// IO implements Navigator.
func (c *Client) IO(ctx context.Context, r *IORequest) (*NodeIO, error) {
	return remote[IORequest, NodeIO](ctx, c, MethodIO, r)
}

// pluginError names the plugin an error came from.
type pluginError struct {
	name string
	err  *Error
}

func (e *pluginError) Error() string { return fmt.Sprintf("plugin %q: %s", e.name, e.err.Error()) }
func (e *pluginError) Unwrap() error { return e.err }
