package plugin

import (
	"context"

	"github.com/sextant-dev/sextant/sdk"
)

// NavigatorClient is a wasm or process navigator: sdk.Navigator over a
// Conn, and nothing else, so a type switch on an opened plugin says what it
// really is.
type NavigatorClient struct {
	*sdk.NavigatorClient
	conn Conn
}

// ProviderClient is a wasm or process provider: sdk.Provider over a Conn.
type ProviderClient struct {
	*sdk.ProviderClient
	conn Conn
}

// EmbedderClient is a wasm or process provider that embeds (its Describe
// answer has Embed): sdk.Embedder over a Conn.
type EmbedderClient struct {
	*sdk.EmbedderClient
	conn Conn
}

// GateClient is a wasm or process gate: sdk.Gate over a Conn.
type GateClient struct {
	*sdk.GateClient
	conn Conn
}

var (
	_ sdk.Navigator = (*NavigatorClient)(nil)
	_ sdk.Provider  = (*ProviderClient)(nil)
	_ sdk.Embedder  = (*EmbedderClient)(nil)
	_ sdk.Gate      = (*GateClient)(nil)
	_ closer        = (*NavigatorClient)(nil)
	_ closer        = (*ProviderClient)(nil)
	_ closer        = (*EmbedderClient)(nil)
	_ closer        = (*GateClient)(nil)
)

type closer interface {
	Close(ctx context.Context) error
}

// Close closes the underlying connection.
func (c *NavigatorClient) Close(ctx context.Context) error { return c.conn.Close(ctx) }

// Close closes the underlying connection.
func (c *ProviderClient) Close(ctx context.Context) error { return c.conn.Close(ctx) }

// Close closes the underlying connection.
func (c *EmbedderClient) Close(ctx context.Context) error { return c.conn.Close(ctx) }

// Close closes the underlying connection.
func (c *GateClient) Close(ctx context.Context) error { return c.conn.Close(ctx) }

// NewKindClient returns the kind-typed client (*NavigatorClient,
// *ProviderClient, *EmbedderClient, *GateClient or *ToolClient) for the
// plugin behind conn, whose Describe answer is info (a provider whose
// answer has Embed is an *EmbedderClient). When want is not empty and the plugin is of
// another kind it returns an *sdk.KindError naming the plugin and both
// kinds.
func NewKindClient(name string, conn Conn, info sdk.Info, want sdk.Kind) (sdk.Plugin, error) {
	p, err := sdk.NewKindClient(name, conn, info, want)
	if err != nil {
		return nil, err
	}
	switch c := p.(type) {
	case *sdk.NavigatorClient:
		return &NavigatorClient{NavigatorClient: c, conn: conn}, nil
	case *sdk.ProviderClient:
		return &ProviderClient{ProviderClient: c, conn: conn}, nil
	case *sdk.EmbedderClient:
		return &EmbedderClient{EmbedderClient: c, conn: conn}, nil
	case *sdk.ToolClient:
		return &ToolClient{ToolClient: c, conn: conn}, nil
	default:
		return &GateClient{GateClient: c.(*sdk.GateClient), conn: conn}, nil
	}
}

// Client is the untyped client of a wasm or process plugin: it answers
// every kind's methods and checks nothing. The registry never returns one;
// it serves transport tests that push raw calls at a plugin.
type Client struct {
	*sdk.Client
	conn Conn
}

// NewClient returns an untyped client for conn; info is the plugin's
// Describe answer (see Describe). Prefer NewKindClient.
func NewClient(name string, conn Conn, info sdk.Info) *Client {
	return &Client{Client: sdk.NewClient(name, conn, info), conn: conn}
}

// Close closes the underlying connection.
func (c *Client) Close(ctx context.Context) error { return c.conn.Close(ctx) }

// Describe asks the plugin over conn for its Info.
func Describe(ctx context.Context, name string, conn Conn) (sdk.Info, error) {
	return sdk.DescribeOver(ctx, name, conn)
}
