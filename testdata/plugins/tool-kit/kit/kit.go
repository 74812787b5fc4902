// Package kit is a tool plugin for the host's tests: a few tools that
// answer, fail, panic, fetch over HTTP or answer too much on request. The
// host's tool tests open it linked in (builtin), as a wasm module and as a
// process plugin (../main.go), and want the same answers over all three.
package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// Name is the plugin's name.
const Name = "tool-kit"

// Kit is the tool-kit plugin.
type Kit struct{}

var _ sdk.Tool = Kit{}

// Describe implements sdk.Plugin.
func (Kit) Describe() sdk.Info {
	return sdk.Info{Name: Name, Kind: sdk.KindTool, Version: "1.0.0", API: sdk.APIVersion,
		Description: "test tools: echo, add, fail, refuse, big, fetch, panic"}
}

var yes, no = true, false

// Tools is what ListTools returns.
var Tools = []sdk.ToolSpec{
	{Name: "echo", Description: "Answers with its arguments and the call's config.",
		InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &sdk.ToolAnnotations{ReadOnly: &yes, Idempotent: &yes}},
	{Name: "add", Description: "Adds two numbers.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
	{Name: "fail", Description: "Fails as a tool does: a result marked as an error."},
	{Name: "refuse", Description: "Refuses the call: a bad-request error."},
	{Name: "big", Description: "Answers n bytes.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
	{Name: "fetch", Description: "GETs a URL through the host and answers the body.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`), Annotations: &sdk.ToolAnnotations{Destructive: &no}},
	{Name: "panic", Description: "Panics."},
}

// ListTools implements sdk.Tool.
func (Kit) ListTools(context.Context) ([]sdk.ToolSpec, error) { return Tools, nil }

// CallTool implements sdk.Tool.
func (Kit) CallTool(_ context.Context, r *sdk.ToolCallRequest) (*sdk.ToolResult, error) {
	switch r.Name {
	case "echo":
		cfg, _ := json.Marshal(r.Config)
		return &sdk.ToolResult{Content: string(r.Arguments), Structured: json.RawMessage(fmt.Sprintf(`{"config":%s}`, cfg))}, nil
	case "add":
		var args struct{ A, B *float64 }
		if err := json.Unmarshal(r.Arguments, &args); err != nil || args.A == nil || args.B == nil {
			return &sdk.ToolResult{Content: `add wants {"a": number, "b": number}`, IsError: true}, nil
		}
		sum := *args.A + *args.B
		return &sdk.ToolResult{Content: fmt.Sprint(sum), Structured: json.RawMessage(fmt.Sprintf(`{"sum":%v}`, sum))}, nil
	case "fail":
		return &sdk.ToolResult{Content: "the tool failed", IsError: true}, nil
	case "refuse":
		return nil, sdk.Errorf(sdk.CodeBadRequest, "refused: %s", r.Arguments)
	case "big":
		var args struct{ N int }
		if err := json.Unmarshal(r.Arguments, &args); err != nil || args.N < 0 {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "big wants {\"n\": a count}")
		}
		return &sdk.ToolResult{Content: strings.Repeat("x", args.N)}, nil
	case "fetch":
		var args struct{ URL string }
		if err := json.Unmarshal(r.Arguments, &args); err != nil {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "fetch wants {\"url\": \"…\"}")
		}
		resp, err := sdk.HTTP(&sdk.HTTPRequest{Method: "GET", URL: args.URL})
		if err != nil {
			return &sdk.ToolResult{Content: err.Error(), IsError: true}, nil
		}
		return &sdk.ToolResult{Content: fmt.Sprintf("%d %s", resp.Status, resp.Body)}, nil
	case "panic":
		panic("tool-kit: deliberate panic")
	}
	return nil, sdk.Errorf(sdk.CodeBadRequest, "no tool %q", r.Name)
}
