package plugin

import (
	"context"
	"fmt"

	"github.com/sextant-dev/sextant/sdk"
)

// Client implements the sdk plugin interfaces over a Conn: it is what the
// host holds for a wasm or process plugin. Which of sdk.Gate, sdk.Provider
// and sdk.Navigator it may be used as depends on the plugin's kind.
type Client struct {
	name string
	conn Conn

	info sdk.Info
}

// NewClient returns a typed client for conn. info is the plugin's Describe
// answer, fetched once when the plugin is opened.
func NewClient(name string, conn Conn, info sdk.Info) *Client {
	c := &Client{name: name, conn: conn, info: info}
	return c
}

var (
	_ sdk.Gate      = (*Client)(nil)
	_ sdk.Provider  = (*Client)(nil)
	_ sdk.Navigator = (*Client)(nil)
)

// Describe returns the plugin's Describe answer.
func (c *Client) Describe() sdk.Info { return c.info }

// Close closes the underlying connection.
func (c *Client) Close(ctx context.Context) error { return c.conn.Close(ctx) }

// Describe asks a plugin over conn for its Info.
func Describe(ctx context.Context, name string, conn Conn) (sdk.Info, error) {
	var info sdk.Info
	err := roundTrip(ctx, name, conn, sdk.MethodDescribe, struct{}{}, &info)
	return info, err
}

func roundTrip(ctx context.Context, name string, conn Conn, method string, params, result any) error {
	req, err := sdk.EncodeRequest(method, params)
	if err != nil {
		return fmt.Errorf("plugin %q: %w", name, err)
	}
	resp, err := conn.RoundTrip(ctx, req)
	if err != nil {
		return err // transports name the plugin and the fault
	}
	if err := sdk.DecodeResponse(resp, result); err != nil {
		if e, ok := err.(*sdk.Error); ok {
			return e // the plugin's own answer, kept intact for errors.Is and Problems
		}
		return fmt.Errorf("plugin %q: %s: %w", name, method, err)
	}
	return nil
}

func call[Req, Resp any](ctx context.Context, c *Client, method string, req *Req) (*Resp, error) {
	out := new(Resp)
	if err := roundTrip(ctx, c.name, c.conn, method, req, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Check implements sdk.Gate.
func (c *Client) Check(ctx context.Context, r *sdk.Comparison) (*sdk.Verdict, error) {
	return call[sdk.Comparison, sdk.Verdict](ctx, c, sdk.MethodCheck, r)
}

// Chat implements sdk.Provider.
func (c *Client) Chat(ctx context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	return call[sdk.ChatRequest, sdk.ChatResponse](ctx, c, sdk.MethodChat, r)
}

// Load implements sdk.Navigator.
func (c *Client) Load(ctx context.Context, r *sdk.LoadRequest) (*sdk.Routine, error) {
	return call[sdk.LoadRequest, sdk.Routine](ctx, c, sdk.MethodLoad, r)
}

// Start implements sdk.Navigator.
func (c *Client) Start(ctx context.Context, r *sdk.StartRequest) (*sdk.Decision, error) {
	return call[sdk.StartRequest, sdk.Decision](ctx, c, sdk.MethodStart, r)
}

// Next implements sdk.Navigator.
func (c *Client) Next(ctx context.Context, r *sdk.NextRequest) (*sdk.Decision, error) {
	return call[sdk.NextRequest, sdk.Decision](ctx, c, sdk.MethodNext, r)
}

// Boundary implements sdk.Navigator.
func (c *Client) Boundary(ctx context.Context, r *sdk.BoundaryRequest) (*sdk.Decision, error) {
	return call[sdk.BoundaryRequest, sdk.Decision](ctx, c, sdk.MethodBoundary, r)
}

// IO implements sdk.Navigator.
func (c *Client) IO(ctx context.Context, r *sdk.IORequest) (*sdk.NodeIO, error) {
	return call[sdk.IORequest, sdk.NodeIO](ctx, c, sdk.MethodIO, r)
}
