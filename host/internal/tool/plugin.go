package tool

import (
	"context"
	"encoding/json"

	"github.com/sextant-dev/sextant/sdk"
)

// pluginSource is a tool plugin (sdk.Tool), over whichever transport the
// registry opened it.
type pluginSource struct {
	t      sdk.Tool
	close  func(context.Context) error
	config map[string]any
}

var _ Source = (*pluginSource)(nil)

func (p *pluginSource) List(ctx context.Context) ([]sdk.ToolSpec, error) { return p.t.ListTools(ctx) }

func (p *pluginSource) Call(ctx context.Context, name string, args json.RawMessage) (*sdk.ToolResult, error) {
	return p.t.CallTool(ctx, &sdk.ToolCallRequest{Name: name, Arguments: args, Config: p.config})
}

func (p *pluginSource) Close() error {
	if p.close == nil {
		return nil
	}
	return p.close(context.Background())
}
