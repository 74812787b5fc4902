package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/sextant-dev/sextant/sdk"
)

// MaxToolResult bounds a tool call's result (its Content and Structured
// together), whatever the transport: a result is shown to a model, whose
// context a larger one would only flood, and it is recorded with the run.
const MaxToolResult = 1 << 20

// ToolClient is a wasm or process tool plugin: sdk.Tool over a Conn. Its
// list and results are checked as a builtin's are (CheckTools,
// MaxToolResult).
type ToolClient struct {
	*sdk.ToolClient
	conn Conn
}

var (
	_ sdk.Tool = (*ToolClient)(nil)
	_ closer   = (*ToolClient)(nil)
	_ sdk.Tool = builtinTool{}
)

// Close closes the underlying connection.
func (c *ToolClient) Close(ctx context.Context) error { return c.conn.Close(ctx) }

// ListTools implements sdk.Tool: the plugin's list, refused when
// CheckTools finds a fault in it.
func (c *ToolClient) ListTools(ctx context.Context) ([]sdk.ToolSpec, error) {
	specs, err := c.ToolClient.ListTools(ctx)
	if err != nil {
		return nil, err
	}
	if err := CheckTools(c.Describe().Name, specs); err != nil {
		return nil, err
	}
	return specs, nil
}

// CallTool implements sdk.Tool: the plugin's result, refused when it is
// over MaxToolResult.
func (c *ToolClient) CallTool(ctx context.Context, r *sdk.ToolCallRequest) (*sdk.ToolResult, error) {
	res, err := c.ToolClient.CallTool(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := checkResult(c.Describe().Name, r.Name, res); err != nil {
		return nil, err
	}
	return res, nil
}

// builtinTool is a builtin tool plugin as the host calls it: its errors
// name it as a wire client's do, a panic is an error rather than the
// host's crash, and its list and results are checked as a wire plugin's.
type builtinTool struct {
	name   string
	t      sdk.Tool
	logger *slog.Logger
}

// Describe implements sdk.Plugin.
func (b builtinTool) Describe() sdk.Info { return b.t.Describe() }

// ListTools implements sdk.Tool.
func (b builtinTool) ListTools(ctx context.Context) (specs []sdk.ToolSpec, err error) {
	defer b.recover(sdk.MethodToolList, &err)
	specs, err = b.t.ListTools(ctx)
	if err != nil {
		return nil, b.named(err)
	}
	if specs == nil {
		specs = []sdk.ToolSpec{} // as tool.list answers: an empty list, not none
	}
	if err := CheckTools(b.name, specs); err != nil {
		return nil, err
	}
	return specs, nil
}

// CallTool implements sdk.Tool.
func (b builtinTool) CallTool(ctx context.Context, r *sdk.ToolCallRequest) (res *sdk.ToolResult, err error) {
	defer b.recover(sdk.MethodToolCall, &err)
	res, err = b.t.CallTool(ctx, r)
	if err != nil {
		return nil, b.named(err)
	}
	if res == nil {
		return nil, b.named(sdk.Errorf(sdk.CodeInternal, "%s returned neither a result nor an error", sdk.MethodToolCall))
	}
	if err := checkResult(b.name, r.Name, res); err != nil {
		return nil, err
	}
	return res, nil
}

// named says which plugin an error came from, in the words a wire client
// uses, keeping the *sdk.Error (and its code) reachable.
func (b builtinTool) named(err error) error {
	e := sdk.AsError(err)
	if e.Code == sdk.CodeInvalid && len(e.Problems) > 0 {
		return e // positioned problems already say where
	}
	return fmt.Errorf("plugin %q: %w", b.name, e)
}

// recover turns a panic in the plugin into an internal error naming it;
// the stack goes to the log, as a wire plugin's stderr does.
func (b builtinTool) recover(method string, err *error) {
	if r := recover(); r != nil {
		b.logger.Error("builtin plugin panicked", "plugin", b.name, "method", method, "panic", r, "stack", string(debug.Stack()))
		*err = b.named(sdk.Errorf(sdk.CodeInternal, "panicked: %v", r))
	}
}

// CheckTools reports the first fault of a tool plugin's list: a name no
// provider accepts (sdk.ValidToolName), a name listed twice, or an input
// schema that is not a JSON object.
func CheckTools(plugin string, specs []sdk.ToolSpec) error {
	seen := make(map[string]bool, len(specs))
	for i, s := range specs {
		switch {
		case !sdk.ValidToolName(s.Name):
			return fmt.Errorf("plugin %q: %s: tool %d: invalid name %q (want 1 to 64 letters, digits, _ or -)", plugin, sdk.MethodToolList, i, s.Name)
		case seen[s.Name]:
			return fmt.Errorf("plugin %q: %s: tool %q listed twice", plugin, sdk.MethodToolList, s.Name)
		}
		seen[s.Name] = true
		if len(s.InputSchema) > 0 && !jsonObject(s.InputSchema) {
			return fmt.Errorf("plugin %q: %s: tool %q: input_schema is not a JSON object", plugin, sdk.MethodToolList, s.Name)
		}
	}
	return nil
}

func jsonObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// ErrToolResultTooLarge is what a call whose result is over MaxToolResult
// wraps.
var ErrToolResultTooLarge = errors.New("tool result too large")

func checkResult(plugin, tool string, res *sdk.ToolResult) error {
	if n := len(res.Content) + len(res.Structured); n > MaxToolResult {
		return fmt.Errorf("plugin %q: %s %q: result of %d bytes is over the %d-byte limit: %w", plugin, sdk.MethodToolCall, tool, n, MaxToolResult, ErrToolResultTooLarge)
	}
	return nil
}
