package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// WordCount is a tool plugin with one tool, count_words.
type WordCount struct{}

func (WordCount) Describe() sdk.Info {
	return sdk.Info{Name: "word-count", Kind: sdk.KindTool, Version: "1.0.0", API: sdk.APIVersion}
}

func (WordCount) ListTools(context.Context) ([]sdk.ToolSpec, error) {
	yes := true
	return []sdk.ToolSpec{{
		Name:        "count_words",
		Description: "Counts the words of a text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Annotations: &sdk.ToolAnnotations{ReadOnly: &yes},
	}}, nil
}

func (WordCount) CallTool(_ context.Context, r *sdk.ToolCallRequest) (*sdk.ToolResult, error) {
	if r.Name != "count_words" {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "no tool %q", r.Name)
	}
	var args struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(r.Arguments, &args); err != nil || args.Text == nil {
		// The model's mistake: a result it is shown, so that it can retry.
		return &sdk.ToolResult{Content: `want {"text": "…"}`, IsError: true}, nil
	}
	n := len(strings.Fields(*args.Text))
	return &sdk.ToolResult{Content: fmt.Sprint(n), Structured: json.RawMessage(fmt.Sprintf(`{"words":%d}`, n))}, nil
}

// A tool plugin lists its tools and answers calls by name; sdktest.Wire
// carries both through the wire encoding, as the host does.
func ExampleTool() {
	ctx := context.Background()
	c := sdktest.Wire(WordCount{})
	specs, _ := c.ListTools(ctx)
	fmt.Println(specs[0].Name, *specs[0].Annotations.ReadOnly)
	res, _ := c.CallTool(ctx, &sdk.ToolCallRequest{Name: "count_words", Arguments: json.RawMessage(`{"text":"to be or not"}`)})
	fmt.Println(res.Content, string(res.Structured), res.IsError)
	res, _ = c.CallTool(ctx, &sdk.ToolCallRequest{Name: "count_words", Arguments: json.RawMessage(`{}`)})
	fmt.Println(res.Content, res.IsError)
	_, err := c.CallTool(ctx, &sdk.ToolCallRequest{Name: "rm", Arguments: json.RawMessage(`{}`)})
	fmt.Println(err)
	// Output:
	// count_words true
	// 4 {"words":4} false
	// want {"text": "…"} true
	// plugin "word-count": no tool "rm"
}
