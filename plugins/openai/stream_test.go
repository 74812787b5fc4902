package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/sdk"
)

// streamServer answers every call with status, content type and body.
func streamServer(t *testing.T, status int, ctype, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func sseChunk(content string) string {
	return `data: {"id":"c1","model":"m-1","choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}` + "\n\n"
}

const streamEnd = `data: {"id":"c1","model":"m-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
	`data: {"id":"c1","model":"m-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}` + "\n\n" + "data: [DONE]\n\n"

func chatStream(t *testing.T, url string, onDelta func(string) error) ([]string, *sdk.ChatResponse, error) {
	var deltas []string
	if onDelta == nil {
		onDelta = func(d string) error { deltas = append(deltas, d); return nil }
	}
	resp, err := openai.New().ChatStream(context.Background(), &sdk.ChatRequest{Model: "m",
		Messages: []sdk.Message{{Role: "user", Content: "hi"}}, Config: map[string]any{"base_url": url, "api_key": "sk-test"}}, onDelta)
	return deltas, resp, err
}

func TestChatStream(t *testing.T) {
	deltas, resp, err := chatStream(t, streamServer(t, 200, "text/event-stream", sseChunk("Hel")+": keep-alive\n\n"+sseChunk("lo")+streamEnd), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &sdk.ChatResponse{Text: "Hello", Usage: sdk.Usage{InputTokens: 5, OutputTokens: 2}, FinishReason: "stop", Model: "m-1", ID: "c1"}
	if !reflect.DeepEqual(deltas, []string{"Hel", "lo"}) || !reflect.DeepEqual(resp, want) {
		t.Fatalf("deltas %q answer %+v, want Hel lo and %+v", deltas, resp, want)
	}
	// A server that ignores "stream": true: one delta.
	deltas, resp, err = chatStream(t, streamServer(t, 200, "application/json",
		`{"id":"c2","model":"m-1","choices":[{"message":{"content":"whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`), nil)
	if err != nil || !reflect.DeepEqual(deltas, []string{"whole"}) || resp.Text != "whole" {
		t.Fatalf("json answer: deltas %q answer %+v err %v", deltas, resp, err)
	}
}

func TestChatStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, body string
		status            int
		code              sdk.Code
		msg               string
		deltas            int
	}{
		{"refused", "application/json", `{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit_exceeded"}}`, 429, sdk.CodeRateLimited, "slow down", 0},
		{"error event", "text/event-stream", sseChunk("Hi") + `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n", 200, sdk.CodeUnavailable, "stream error server_error: overloaded", 1},
		{"cut short", "text/event-stream", sseChunk("Hi"), 200, sdk.CodeUnavailable, "cut short after 1 events", 1},
		{"malformed", "text/event-stream", "data: {\"choices\":[\n\n", 200, sdk.CodeUnavailable, "malformed stream event 1", 0},
		{"huge event", "text/event-stream", "data: " + strings.Repeat("x", 5<<20) + "\n\n", 200, sdk.CodeUnavailable, "stream event 1 is over 4194304 bytes", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deltas, resp, err := chatStream(t, streamServer(t, tc.status, tc.ctype, tc.body), nil)
			var se *sdk.Error
			if !errors.As(err, &se) || se.Code != tc.code || !strings.Contains(se.Message, tc.msg) || resp != nil {
				t.Fatalf("err %v (%T), answer %+v; want %s containing %q", err, err, resp, tc.code, tc.msg)
			}
			if len(deltas) != tc.deltas {
				t.Errorf("deltas %q, want %d", deltas, tc.deltas)
			}
		})
	}
	// The caller's own error ends the call.
	stop := errors.New("client gone")
	_, _, err := chatStream(t, streamServer(t, 200, "text/event-stream", sseChunk("a")+sseChunk("b")+streamEnd), func(string) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("err %v, want the callback's", err)
	}
}

// TestChatStreamToolCalls: tool calls streamed in pieces, two at once,
// are assembled by index; they add no text deltas.
func TestChatStreamToolCalls(t *testing.T) {
	call := func(delta string) string {
		return `data: {"id":"c1","model":"m-1","choices":[{"index":0,"delta":{"tool_calls":[` + delta + `]},"finish_reason":null}]}` + "\n\n"
	}
	body := sseChunk("Let me look.") +
		call(`{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":"{\"pa"}}`) +
		call(`{"index":1,"id":"call_b","type":"function","function":{"name":"list","arguments":""}}`) +
		call(`{"index":0,"function":{"arguments":"th\": \"a\"}"}}`) +
		`data: {"id":"c1","model":"m-1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" + "data: [DONE]\n\n"
	deltas, resp, err := chatStream(t, streamServer(t, 200, "text/event-stream", body), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &sdk.ChatResponse{Text: "Let me look.", FinishReason: "tool_calls", Model: "m-1", ID: "c1", ToolCalls: []sdk.ToolCall{
		{ID: "call_a", Name: "read", Arguments: []byte(`{"path":"a"}`)}, {ID: "call_b", Name: "list", Arguments: []byte(`{}`)}}}
	if !reflect.DeepEqual(deltas, []string{"Let me look."}) || !reflect.DeepEqual(resp, want) {
		t.Fatalf("deltas %q answer %+v, want %+v", deltas, resp, want)
	}
}
