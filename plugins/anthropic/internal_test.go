package anthropic

import (
	"reflect"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

func TestStopReason(t *testing.T) {
	for in, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
		"model_context_window_exceeded": "length", "tool_use": "tool_calls",
		"refusal": "refusal", "pause_turn": "pause_turn",
	} {
		if got := stopReason(&in); got != want {
			t.Errorf("%s: got %q, want %q", in, got, want)
		}
	}
	if got := stopReason(nil); got != "" {
		t.Errorf("nil: got %q", got)
	}
}

func TestBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                              DefaultBaseURL,
		"https://api.anthropic.com/":    "https://api.anthropic.com",
		"https://api.anthropic.com/v1":  "https://api.anthropic.com",
		"https://api.anthropic.com/v1/": "https://api.anthropic.com",
		"http://proxy:8080/anthropic":   "http://proxy:8080/anthropic",
	} {
		cfg, err := parseConfig(map[string]any{ConfigBaseURL: in})
		if err != nil || cfg.baseURL != want {
			t.Errorf("%q: got %q, %v; want %q", in, cfg.baseURL, err, want)
		}
	}
}

// TestPrefill: JSON mode prefills only after a user turn, so that a
// caller's own assistant prefill is continued, not doubled.
func TestPrefill(t *testing.T) {
	on := &config{prefill: true}
	for _, tc := range []struct {
		name       string
		msgs       []sdk.Message
		wantPrefix string
		wantLast   message
	}{
		{"after user", []sdk.Message{{Role: "user", Content: "q"}}, "{", message{Role: "assistant", Content: "{"}},
		{"after caller's prefill", []sdk.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "{\"a\":"}}, "", message{Role: "assistant", Content: "{\"a\":"}},
		{"after tool results", []sdk.Message{{Role: "user", Content: "q"}, {Role: "assistant", ToolCalls: []sdk.ToolCall{{ID: "t1", Name: "f"}}},
			{Role: "tool", ToolCallID: "t1", Content: "r"}}, "{", message{Role: "assistant", Content: "{"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, prefix, err := request(on, &sdk.ChatRequest{Model: "m", Messages: tc.msgs, JSON: true})
			if err != nil {
				t.Fatal(err)
			}
			if prefix != tc.wantPrefix || !reflect.DeepEqual(req.Messages[len(req.Messages)-1], tc.wantLast) {
				t.Errorf("prefix %q, last %+v; want %q, %+v", prefix, req.Messages[len(req.Messages)-1], tc.wantPrefix, tc.wantLast)
			}
			if req.System != JSONInstruction {
				t.Errorf("system %q", req.System)
			}
		})
	}
}
