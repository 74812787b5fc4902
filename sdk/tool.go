package sdk

import (
	"context"
	"encoding/json"
)

// Tool is a tool plugin: a set of tools a model can call from an llm
// step. The host lists them once per run and calls them by name.
type Tool interface {
	Plugin
	// ListTools returns the tools the plugin offers, with their argument
	// schemas. It must return the same list on every call.
	ListTools(ctx context.Context) ([]ToolSpec, error)
	// CallTool runs one tool. A failure of the tool itself (a file that
	// does not exist, a refused query) is a result with IsError set, which
	// the model is shown; an error is for calls the plugin cannot make at
	// all (an unknown tool, bad arguments: *Error with CodeBadRequest).
	CallTool(ctx context.Context, r *ToolCallRequest) (*ToolResult, error)
}

// ToolCallRequest is one call of a tool plugin's tool.
type ToolCallRequest struct {
	// Name is one of the names ListTools returned.
	Name string `json:"name"`
	// Arguments is the JSON object of the call's arguments.
	Arguments json.RawMessage `json:"arguments"`
	// Config is the tool source's block from the pipeline ([tools.NAME]).
	Config map[string]any `json:"config,omitempty"`
}

// The Config keys the host fills when the tool source's block names a data
// file ([tools.NAME] data = "FILE"): the file's text, read once by the
// host, so that a plugin with no filesystem (a wasm module) can serve a
// table or a document; and its path as written, slash-separated, for
// messages and to tell formats apart.
const (
	ToolConfigData     = "data"
	ToolConfigDataFile = "data_file"
)

// ToolResult is what a tool call returns to the model.
type ToolResult struct {
	// Content is the text the model is shown.
	Content string `json:"content"`
	// Structured is an optional JSON value of the result.
	Structured json.RawMessage `json:"structured,omitempty"`
	// IsError marks a result that reports the tool's own failure.
	IsError bool `json:"is_error,omitempty"`
}

// ToolList is the result of tool.list: the tools a tool plugin offers.
type ToolList struct {
	Tools []ToolSpec `json:"tools"`
}

// ToolListRequest is the params of tool.list, which has none today.
type ToolListRequest struct{}

// ValidToolName reports whether name is a tool name every provider
// accepts: 1 to 64 ASCII letters, digits, '_' and '-' (OpenAI's and
// Anthropic's rule).
func ValidToolName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
