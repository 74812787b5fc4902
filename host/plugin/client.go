package plugin

import (
	"context"

	"github.com/sextant-dev/sextant/sdk"
)

// Client is a wasm or process plugin seen through the sdk interfaces.
type Client struct {
	*sdk.Client
	conn Conn
}

// NewClient returns a typed client for conn; info is the plugin's Describe
// answer (see Describe).
func NewClient(name string, conn Conn, info sdk.Info) *Client {
	return &Client{Client: sdk.NewClient(name, conn, info), conn: conn}
}

// Close closes the underlying connection.
func (c *Client) Close(ctx context.Context) error { return c.conn.Close(ctx) }

// Describe asks the plugin over conn for its Info.
func Describe(ctx context.Context, name string, conn Conn) (sdk.Info, error) {
	return sdk.DescribeOver(ctx, name, conn)
}
