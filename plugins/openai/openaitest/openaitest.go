// Package openaitest holds the openai provider's test suite: the fake
// OpenAI API's behaviours and the case table every transport runs. It is a
// test-helper package, like net/http/httptest: the provider's own tests run
// the suite in process, and the host's tests run it over the process and
// wasm transports and compare the outcomes byte for byte.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/plugins/providertest"
	"github.com/sextant-dev/sextant/sdk"
)

// PluginPkg is the import path of the provider's plugin main, for
// providertest.BuildPlugin.
const PluginPkg = "github.com/sextant-dev/sextant/plugins/openai/plugin"

// TestKey is the API key every case sends. No error may contain it.
const TestKey = "sk-test-abcdef0123456789"

// Spec is what this provider's suite fills into the shared harness.
var Spec = providertest.Spec{Key: TestKey, Suffix: "/v1", Endpoint: "/v1/chat/completions"}

type (
	chatCase = providertest.Case
	received = providertest.Received
)

// --- server behaviours ---

func reply(status int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func completion(content, finish string, in, out int) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-abc123", "object": "chat.completion", "created": 1741569952,
		"model": "gpt-4o-mini-2024-07-18",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content, "refusal": nil},
			"logprobs":      nil,
			"finish_reason": finish,
		}},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out,
			"prompt_tokens_details": map[string]any{"cached_tokens": 0}},
		"system_fingerprint": "fp_06737a9306",
	})
	return string(b)
}

func apiError(message, typ string, code any) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}})
	return string(b)
}

// sse streams events the way OpenAI does: one "data:" line per chunk,
// flushed one by one.
func sse(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
	}
}

func chunk(delta map[string]any, finish any) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-s1", "object": "chat.completion.chunk", "created": 1741569952, "model": "gpt-4o-mini-2024-07-18",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	})
	return string(b)
}

// slow answers nothing until the client goes away (or 3s pass, so that
// the server can close after a cancelled call, whose request runs on).
func slow(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(3 * time.Second):
	}
}

// truncated promises a body longer than it sends, then drops the connection.
func truncated(w http.ResponseWriter, r *http.Request) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	body := completion("Hello there, this answer will be cut", "stop", 10, 10)
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)/2])
	buf.Flush()
}

// closedPort returns a local address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// --- received-body assertions ---

func wantBody(t *testing.T, got received, key string, want any) {
	t.Helper()
	v, ok := got.Body[key]
	if want == nil {
		if ok {
			t.Errorf("body has %s = %v, want it absent", key, v)
		}
		return
	}
	var norm any // want as the server decoded it: objects as maps, numbers as float64
	wb, _ := json.Marshal(want)
	_ = json.Unmarshal(wb, &norm)
	wb, _ = json.Marshal(norm)
	gb, _ := json.Marshal(v)
	if !ok || string(wb) != string(gb) {
		t.Errorf("body %s = %s, want %s", key, gb, wb)
	}
}

func wantHeader(t *testing.T, got received, key, want string) {
	t.Helper()
	if v := got.Header.Get(key); v != want {
		t.Errorf("header %s = %q, want %q", key, v, want)
	}
}

func temp(f float64) *float64 { return &f }

var yes, no = true, false

// Tools are the tools the tool cases offer.
var Tools = []sdk.ToolSpec{
	{Name: "get_weather", Description: "Current weather of a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "get_time"},
}

// ToolMsgs is a conversation with a round of tool calls in it: the
// assistant's calls, their answers (one a failure), and a new question.
var ToolMsgs = []sdk.Message{
	{Role: "user", Content: "Weather in Paris, and the time?"},
	{Role: "assistant", ToolCalls: []sdk.ToolCall{{ID: "call_0", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Lyon"}`)}, {ID: "call_9", Name: "get_time"}}},
	{Role: "tool", ToolCallID: "call_0", Content: "12°C, rain"},
	{Role: "tool", ToolCallID: "call_9", Content: "clock unavailable", IsError: true},
	{Role: "assistant", Content: "Lyon: 12°C."},
	{Role: "user", Content: "Now Paris."},
}

// toolCompletion is a completion whose message is the JSON text msg.
func toolCompletion(msg, finish string) string {
	return `{"id":"chatcmpl-t1","object":"chat.completion","created":1741569952,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":` +
		msg + `,"logprobs":null,"finish_reason":"` + finish + `"}],"usage":{"prompt_tokens":80,"completion_tokens":30,"total_tokens":110}}`
}

// Msgs is a system and a user message, what most cases send.
var Msgs = []sdk.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Say hello."}}

// Cases is the suite every transport runs. It takes t for the closed port
// the connection-refused case dials.
func Cases(t *testing.T) []chatCase {
	refused := closedPort(t)
	cut := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hel`
	noChoices := `{"id":"chatcmpl-2","object":"chat.completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}`
	return []chatCase{
		{
			Name: "success",
			Req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs, Temperature: temp(0.2), MaxTokens: 50, Stop: []string{"END"}},
			Config: map[string]any{
				"organization": "org-sextant", "project": "proj_42",
			},
			Serve: reply(200, map[string]string{"x-request-id": "req_1"}, completion("Hello there.", "stop", 12, 5)),
			Check: func(t *testing.T, got received) {
				wantHeader(t, got, "Authorization", "Bearer "+TestKey)
				wantHeader(t, got, "OpenAI-Organization", "org-sextant")
				wantHeader(t, got, "OpenAI-Project", "proj_42")
				wantHeader(t, got, "Accept", "application/json")
				wantBody(t, got, "model", "gpt-4o-mini")
				wantBody(t, got, "messages", Msgs)
				wantBody(t, got, "temperature", 0.2)
				wantBody(t, got, "max_tokens", 50) // not api.openai.com: max_tokens
				wantBody(t, got, "max_completion_tokens", nil)
				wantBody(t, got, "stop", []string{"END"})
				wantBody(t, got, "response_format", nil)
				wantBody(t, got, "stream", nil)
				if len(got.Body) != 5 {
					t.Errorf("body has %d fields, want 5: %v", len(got.Body), got.Body)
				}
			},
			Want: &sdk.ChatResponse{Text: "Hello there.", Usage: sdk.Usage{InputTokens: 12, OutputTokens: 5}, FinishReason: "stop", Model: "gpt-4o-mini-2024-07-18", ID: "chatcmpl-abc123"},
		},
		{
			Name:  "json-mode",
			Req:   sdk.ChatRequest{Model: "gpt-4o-mini", Messages: []sdk.Message{{Role: "user", Content: "Reply as JSON {\"action\":...}"}}, JSON: true},
			Serve: reply(200, nil, completion(`{"action":"archive"}`, "stop", 20, 6)),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "response_format", map[string]any{"type": "json_object"})
				wantBody(t, got, "max_tokens", nil) // zero: left to the server
				wantBody(t, got, "temperature", nil)
			},
			Want: &sdk.ChatResponse{Text: `{"action":"archive"}`, Usage: sdk.Usage{InputTokens: 20, OutputTokens: 6}, FinishReason: "stop", Model: "gpt-4o-mini-2024-07-18", ID: "chatcmpl-abc123"},
		},
		{
			Name:   "max-completion-tokens",
			Req:    sdk.ChatRequest{Model: "o3-mini", Messages: Msgs, MaxTokens: 300},
			Config: map[string]any{"max_tokens_param": "max_completion_tokens"},
			Serve:  reply(200, nil, completion("Hi.", "length", 9, 300)),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "max_completion_tokens", 300)
				wantBody(t, got, "max_tokens", nil)
			},
			Want: &sdk.ChatResponse{Text: "Hi.", Usage: sdk.Usage{InputTokens: 9, OutputTokens: 300}, FinishReason: "length", Model: "gpt-4o-mini-2024-07-18", ID: "chatcmpl-abc123"},
		},
		{
			Name:   "local-server-without-key",
			Req:    sdk.ChatRequest{Model: "llama3.1:8b", Messages: Msgs},
			Config: map[string]any{"api_key": nil},
			Serve:  reply(200, nil, `{"id":"chatcmpl-9","object":"chat.completion","created":1,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":26,"completion_tokens":3,"total_tokens":29}}`),
			Check: func(t *testing.T, got received) {
				if v, ok := got.Header["Authorization"]; ok {
					t.Errorf("Authorization sent without a key: %q", v)
				}
			},
			Want: &sdk.ChatResponse{Text: "Hello!", Usage: sdk.Usage{InputTokens: 26, OutputTokens: 3}, FinishReason: "stop", Model: "llama3.1:8b", ID: "chatcmpl-9"},
		},
		{
			Name:   "stream",
			Req:    sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs, MaxTokens: 20},
			Config: map[string]any{"stream": true},
			Serve: sse(
				chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil),
				chunk(map[string]any{"content": "Hello"}, nil),
				chunk(map[string]any{"content": " there"}, nil),
				chunk(map[string]any{"content": "."}, nil),
				chunk(map[string]any{}, "stop"),
				`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
				"[DONE]",
			),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "stream", true)
				wantBody(t, got, "stream_options", map[string]any{"include_usage": true})
				wantBody(t, got, "max_tokens", 20)
				wantHeader(t, got, "Accept", "text/event-stream")
			},
			Want: &sdk.ChatResponse{Text: "Hello there.", Usage: sdk.Usage{InputTokens: 12, OutputTokens: 3}, FinishReason: "stop", Model: "gpt-4o-mini-2024-07-18", ID: "chatcmpl-s1"},
		},
		{
			Name: "tools",
			Req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: ToolMsgs, Tools: Tools, ToolChoice: "get_weather", ParallelToolCalls: &no},
			Serve: reply(200, nil, toolCompletion(`{"role":"assistant","content":null,"refusal":null,"tool_calls":[`+
				`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},`+
				`{"id":"call_2","type":"function","function":{"name":"get_time","arguments":""}},`+
				`{"id":"call_3","type":"function","function":{"name":"get_weather","arguments":"{\"city\": Par"}}]}`, "tool_calls")),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "tools", []any{
					map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Current weather of a city.",
						"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}},
					map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}},
				})
				wantBody(t, got, "tool_choice", map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}})
				wantBody(t, got, "parallel_tool_calls", false)
				wantBody(t, got, "messages", []any{
					map[string]any{"role": "user", "content": "Weather in Paris, and the time?"},
					map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
						map[string]any{"id": "call_0", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Lyon"}`}},
						map[string]any{"id": "call_9", "type": "function", "function": map[string]any{"name": "get_time", "arguments": `{}`}}}},
					map[string]any{"role": "tool", "content": "12°C, rain", "tool_call_id": "call_0"},
					map[string]any{"role": "tool", "content": "clock unavailable", "tool_call_id": "call_9"},
					map[string]any{"role": "assistant", "content": "Lyon: 12°C."},
					map[string]any{"role": "user", "content": "Now Paris."},
				})
			},
			Want: &sdk.ChatResponse{FinishReason: "tool_calls", Model: "gpt-4o-mini-2024-07-18", ID: "chatcmpl-t1", Usage: sdk.Usage{InputTokens: 80, OutputTokens: 30},
				ToolCalls: []sdk.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
					{ID: "call_2", Name: "get_time", Arguments: json.RawMessage(`{}`)},
					{ID: "call_3", Name: "get_weather", Arguments: json.RawMessage(`"{\"city\": Par"`)}}},
		},
		{
			Name: "tool-choice-required",
			Req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs, Tools: Tools[1:], ToolChoice: "required", ParallelToolCalls: &yes},
			Serve: reply(200, nil, toolCompletion(`{"role":"assistant","content":"Checking.","tool_calls":[`+
				`{"id":"call_5","type":"function","function":{"name":"get_time","arguments":"{}"}}]}`, "stop")),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "tool_choice", "required")
				wantBody(t, got, "parallel_tool_calls", true)
			},
			// Ollama says stop when it calls tools: a tool call is tool_calls all the same.
			Want: &sdk.ChatResponse{Text: "Checking.", FinishReason: "tool_calls", Model: "gpt-4o-mini-2024-07-18", ID: "chatcmpl-t1", Usage: sdk.Usage{InputTokens: 80, OutputTokens: 30},
				ToolCalls: []sdk.ToolCall{{ID: "call_5", Name: "get_time", Arguments: json.RawMessage(`{}`)}}},
		},
		{
			Name:  "tool-choice-without-tools",
			Req:   sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs, ToolChoice: "none", ParallelToolCalls: &no},
			Serve: reply(200, nil, completion("Hi.", "stop", 3, 1)),
			Check: func(t *testing.T, got received) {
				// OpenAI refuses tool_choice and parallel_tool_calls without tools.
				wantBody(t, got, "tools", nil)
				wantBody(t, got, "tool_choice", nil)
				wantBody(t, got, "parallel_tool_calls", nil)
			},
			Want: &sdk.ChatResponse{Text: "Hi.", FinishReason: "stop", Model: "gpt-4o-mini-2024-07-18", ID: "chatcmpl-abc123", Usage: sdk.Usage{InputTokens: 3, OutputTokens: 1}},
		},
		{
			Name:   "tools-stream",
			Req:    sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs, Tools: Tools, ToolChoice: "auto"},
			Config: map[string]any{"stream": true},
			Serve: sse(
				chunk(map[string]any{"role": "assistant", "content": nil}, nil),
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_a", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": ""}}}}, nil),
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"ci`}}}}, nil),
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 1, "id": "call_b", "type": "function", "function": map[string]any{"name": "get_time", "arguments": `{`}}}}, nil),
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `ty":"Paris"}`}}}}, nil),
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 1, "function": map[string]any{"arguments": `}`}}}}, nil),
				chunk(map[string]any{}, "tool_calls"),
				`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":20,"total_tokens":60}}`,
				"[DONE]",
			),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "stream", true)
				wantBody(t, got, "tool_choice", "auto")
				wantBody(t, got, "parallel_tool_calls", nil)
			},
			Want: &sdk.ChatResponse{FinishReason: "tool_calls", Model: "gpt-4o-mini-2024-07-18", ID: "chatcmpl-s1", Usage: sdk.Usage{InputTokens: 40, OutputTokens: 20},
				ToolCalls: []sdk.ToolCall{{ID: "call_a", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
					{ID: "call_b", Name: "get_time", Arguments: json.RawMessage(`{}`)}}},
		},
		{
			Name:   "tools-stream-bad-index",
			Req:    sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs, Tools: Tools},
			Config: map[string]any{"stream": true},
			Serve: sse(
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 3, "id": "call_a", "type": "function", "function": map[string]any{"name": "get_time", "arguments": "{}"}}}}, nil),
				chunk(map[string]any{}, "tool_calls"), "[DONE]",
			),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "openai: stream event 1: tool call index 3 out of order (0 calls so far)",
		},
		{
			Name:     "stream-cut-short",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Config:   map[string]any{"stream": true},
			Serve:    sse(chunk(map[string]any{"role": "assistant", "content": "Hel"}, nil), chunk(map[string]any{"content": "lo"}, nil)),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "openai: stream cut short after 2 events: it ended before its final event (data: [DONE], or a chunk with a finish_reason)",
		},
		{
			Name:     "stream-error-event",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Config:   map[string]any{"stream": true},
			Serve:    sse(chunk(map[string]any{"content": "Hel"}, nil), `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "openai: stream error server_error: The server had an error while processing your request. Sorry about that!",
		},
		{
			Name: "rate-limited-retry-after-seconds",
			Req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve: reply(429, map[string]string{"Retry-After": "7"},
				apiError("Rate limit reached for gpt-4o-mini in organization org-sextant on requests per min (RPM): Limit 3, Used 3, Requested 1.", "requests", "rate_limit_exceeded")),
			WantCode:  sdk.CodeRateLimited,
			WantMsg:   "openai: http 429 rate_limit_exceeded: Rate limit reached for gpt-4o-mini in organization org-sextant on requests per min (RPM): Limit 3, Used 3, Requested 1.",
			WantRetry: 7 * time.Second,
		},
		{
			Name: "rate-limited-retry-after-ms",
			Req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve: reply(429, map[string]string{"Retry-After": "2", "retry-after-ms": "1500"},
				apiError("Rate limit reached for gpt-4o-mini on tokens per min (TPM).", "tokens", "rate_limit_exceeded")),
			WantCode:  sdk.CodeRateLimited,
			WantMsg:   "openai: http 429 rate_limit_exceeded: Rate limit reached for gpt-4o-mini on tokens per min (TPM).",
			WantRetry: 1500 * time.Millisecond,
		},
		{
			Name: "rate-limited-retry-after-date",
			Req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve: func(w http.ResponseWriter, r *http.Request) {
				at := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
				reply(429, map[string]string{"Retry-After": at}, apiError("Too many requests", "requests", "rate_limit_exceeded"))(w, r)
			},
			WantCode:  sdk.CodeRateLimited,
			WantMsg:   "openai: http 429 rate_limit_exceeded: Too many requests",
			WantRetry: 1 * time.Second, MaxRetry: 3 * time.Second,
		},
		{
			Name: "insufficient-quota",
			Req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve: reply(429, map[string]string{"Retry-After": "20"},
				apiError("You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", "insufficient_quota")),
			WantCode: sdk.CodeAuth,
			WantMsg:  "openai: http 429 insufficient_quota: You exceeded your current quota, please check your plan and billing details.",
		},
		{
			Name:     "server-error",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve:    reply(500, nil, apiError("The server had an error while processing your request. Sorry about that!", "server_error", nil)),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "openai: http 500 server_error: The server had an error while processing your request. Sorry about that!",
		},
		{
			Name:     "bad-gateway-html",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve:    reply(502, map[string]string{"Content-Type": "text/html"}, "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n"),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "openai: http 502: <html> <head><title>502 Bad Gateway</title></head> <body> <center><h1>502 Bad Gateway</h1></center> </body> </html>",
		},
		{
			Name:     "service-unavailable-empty",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve:    reply(503, map[string]string{"Retry-After": "3"}, ""),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "openai: http 503 (empty body)", WantRetry: 3 * time.Second,
		},
		{
			Name:     "request-timeout-408",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve:    reply(408, nil, apiError("Request timed out.", "timeout", nil)),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "openai: http 408 timeout: Request timed out.",
		},
		{
			Name: "unauthorized-echoing-the-key",
			Req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve: func(w http.ResponseWriter, r *http.Request) {
				key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				reply(401, nil, apiError("Incorrect API key provided: "+key+". You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key"))(w, r)
			},
			WantCode: sdk.CodeAuth,
			WantMsg:  "openai: http 401 invalid_api_key: Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys.",
		},
		{
			Name:     "forbidden",
			Req:      sdk.ChatRequest{Model: "gpt-4o", Messages: Msgs},
			Serve:    reply(403, nil, apiError("Project `proj_42` does not have access to model `gpt-4o`", "invalid_request_error", "model_not_found")),
			WantCode: sdk.CodeAuth,
			WantMsg:  "openai: http 403 model_not_found: Project `proj_42` does not have access to model `gpt-4o`",
		},
		{
			Name:     "bad-request",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs, JSON: true},
			Serve:    reply(400, nil, apiError("'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.", "invalid_request_error", nil)),
			WantCode: sdk.CodeBadRequest,
			WantMsg:  "openai: http 400 invalid_request_error: 'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
		},
		{
			Name:     "model-not-found-ollama",
			Req:      sdk.ChatRequest{Model: "llama9", Messages: Msgs},
			Serve:    reply(404, nil, `{"error":"model \"llama9\" not found, try pulling it first"}`),
			WantCode: sdk.CodeBadRequest,
			WantMsg:  `openai: http 404: model "llama9" not found, try pulling it first`,
		},
		{
			Name:     "unprocessable-vllm",
			Req:      sdk.ChatRequest{Model: "meta-llama/Llama-3.1-8B-Instruct", Messages: Msgs, MaxTokens: 1 << 20},
			Serve:    reply(422, nil, `{"object":"error","message":"max_tokens must be at most 131072","type":"BadRequestError","param":null,"code":422}`),
			WantCode: sdk.CodeBadRequest,
			WantMsg:  "openai: http 422 BadRequestError: max_tokens must be at most 131072",
		},
		{
			Name:       "slow-answer",
			Req:        sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Deadline:   time.Second,
			Serve:      slow,
			WantCode:   sdk.CodeTimeout,
			WantMsg:    "openai: POST {{URL}}/chat/completions: no response before the deadline",
			NativeOnly: true,
		},
		{
			Name:     "truncated-body",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve:    truncated,
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "openai: POST {{URL}}/chat/completions: response body truncated (unexpected EOF)",
		},
		{
			Name:     "malformed-json",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve:    reply(200, nil, cut),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  fmt.Sprintf("openai: malformed response (http 200, %d bytes): unexpected end of JSON input", len(cut)),
		},
		{
			Name:     "html-instead-of-json",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve:    reply(200, map[string]string{"Content-Type": "text/html"}, "<html>captive portal</html>"),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "openai: malformed response (http 200, 27 bytes): invalid character '<' looking for beginning of value",
		},
		{
			Name:     "no-choices",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Serve:    reply(200, nil, noChoices),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  fmt.Sprintf("openai: malformed response (http 200, %d bytes): no choices", len(noChoices)),
		},
		{
			Name:     "connection-refused",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			BaseURL:  "http://" + refused + "/v1",
			WantCode: sdk.CodeUnavailable,
			WantMsg:  `openai: http POST {{URL}}/chat/completions: Post "{{URL}}/chat/completions": dial tcp {{HOSTPORT}}: connect: connection refused`,
		},
		{
			Name:     "bad-config",
			Req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: Msgs},
			Config:   map[string]any{"stream": "yes"},
			Calls:    -1,
			WantCode: sdk.CodeBadRequest,
			WantMsg:  `openai: config stream: want true or false, got string "yes"`,
		},
	}
}
