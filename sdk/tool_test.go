package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// panicky is a tool plugin whose call panics.
type panicky struct{ WordCount }

func (panicky) Describe() sdk.Info {
	return sdk.Info{Name: "panicky", Kind: sdk.KindTool, Version: "1.0.0", API: sdk.APIVersion}
}
func (panicky) CallTool(context.Context, *sdk.ToolCallRequest) (*sdk.ToolResult, error) {
	panic("boom")
}

// TestToolAPI1AndAPI2Agree: a tool plugin's list and calls give the host
// the same results and errors over api 1 and api 2, and api 2 is what
// travels when the plugin lists it.
func TestToolAPI1AndAPI2Agree(t *testing.T) {
	ctx := context.Background()
	calls := func(c sdk.Tool) []any {
		var out []any
		specs, err := c.ListTools(ctx)
		out = append(out, specs, errText(err))
		for _, r := range []*sdk.ToolCallRequest{
			{Name: "count_words", Arguments: json.RawMessage(`{"text": "a b\tc", "extra": [1, 2.50]}`), Config: map[string]any{"root": "/tmp", "n": 2}},
			{Name: "count_words", Arguments: json.RawMessage(`{}`)},
			{Name: "count_words"},
			{Name: "nope", Arguments: json.RawMessage(`{}`)},
		} {
			res, err := c.CallTool(ctx, r)
			out = append(out, res, errText(err))
		}
		return out
	}
	rt := loop(WordCount{})
	info, err := sdk.DescribeOver(ctx, "word-count", rt)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := sdk.NewKindClient("word-count", rt, info, sdk.KindTool)
	if err != nil {
		t.Fatal(err)
	}
	rt.first = nil
	got2 := calls(c2.(*sdk.ToolClient))
	if string(rt.first) != "\x83\x83\x83\x83\x83" {
		t.Fatalf("api 2 client sent envelopes starting % x, want MessagePack maps", rt.first)
	}
	info.APIs = nil
	c1 := sdk.NewClient("word-count", rt, info)
	rt.first = nil
	got1 := calls(c1)
	if string(rt.first) != "{{{{{" {
		t.Fatalf("api 1 client sent % x", rt.first)
	}
	if !reflect.DeepEqual(got1, got2) {
		a, _ := json.Marshal(got1)
		b, _ := json.Marshal(got2)
		t.Fatalf("api 1 and api 2 differ\n api 1 %s\n api 2 %s", a, b)
	}
	if got := got2[2].(*sdk.ToolResult); got.Content != "3" || string(got.Structured) != `{"words":3}` {
		t.Fatalf("count_words = %+v", got)
	}
}

// TestToolKind: a tool plugin gets a *ToolClient, and is refused as any
// other kind (and another kind as a tool) with a *KindError.
func TestToolKind(t *testing.T) {
	ctx := context.Background()
	if _, err := sdk.NewToolClient(ctx, "word-count", loop(WordCount{})); err != nil {
		t.Fatal(err)
	}
	_, err := sdk.NewGateClient(ctx, "word-count", loop(WordCount{}))
	var ke *sdk.KindError
	if !errors.As(err, &ke) || ke.Kind != sdk.KindTool || !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("tool as a gate: %v", err)
	}
	_, err = sdk.NewToolClient(ctx, "min-effect", loop(MinEffect{}))
	if !errors.As(err, &ke) || ke.Want != sdk.KindTool || err.Error() != `plugin "min-effect" is a gate, not a tool` {
		t.Fatalf("gate as a tool: %v", err)
	}
	if !sdk.KindTool.Valid() {
		t.Fatal("KindTool is not valid")
	}
	sdktest.Check(t, WordCount{})
}

// TestToolFaults: a panicking tool, and a gate asked for tool methods,
// answer errors that name the plugin, over both wire versions.
func TestToolFaults(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]*sdk.Client{"api 2": sdktest.Wire(panicky{}), "api 1": sdktest.WireAPI1(panicky{})} {
		_, err := c.CallTool(ctx, &sdk.ToolCallRequest{Name: "count_words", Arguments: json.RawMessage(`{}`)})
		if err == nil || !strings.HasPrefix(err.Error(), `plugin "panicky": panicked: boom [`) {
			t.Fatalf("%s: err = %v", name, err)
		}
	}
	for name, c := range map[string]*sdk.Client{"api 2": sdktest.Wire(MinEffect{}), "api 1": sdktest.WireAPI1(MinEffect{})} {
		_, err := c.ListTools(ctx)
		if want := `plugin "min-effect": gate plugin "min-effect" does not answer "tool.list"`; err == nil || err.Error() != want {
			t.Fatalf("%s: err = %v\nwant  %s", name, err, want)
		}
	}
	// A plugin that answers a result that is not one: the host says so.
	_, err := sdk.NewClient("t", fixed("\x81\xa6result\x81\xa7content\x01"), sdk.Info{Kind: sdk.KindTool, APIs: []int{1, 2}}).
		CallTool(ctx, &sdk.ToolCallRequest{Name: "x"})
	if want := `plugin "t": tool.call: malformed result (81 a6 72 65 73 75 6c 74 81 a7 63 6f 6e 74 65 6e 74 01): at byte 17: result.content: want a string, got an integer`; err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
}

// TestValidToolName: the names both OpenAI and Anthropic accept.
func TestValidToolName(t *testing.T) {
	for name, want := range map[string]bool{"read_file": true, "Get-Weather2": true, "a": true, strings.Repeat("x", 64): true,
		"": false, "read file": false, "a.b": false, "é": false, strings.Repeat("x", 65): false} {
		if got := sdk.ValidToolName(name); got != want {
			t.Errorf("ValidToolName(%q) = %v, want %v", name, got, want)
		}
	}
}
