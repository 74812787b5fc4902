// Package anthropictest holds the anthropic provider's test suite: the fake
// Messages API's behaviours and the case table every transport runs. It is
// a test-helper package, like net/http/httptest: the provider's own tests
// run the suite in process, and the host's tests run it over the process
// and wasm transports and compare the outcomes byte for byte.
package anthropictest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/plugins/anthropic"
	"github.com/sextant-dev/sextant/plugins/providertest"
	"github.com/sextant-dev/sextant/sdk"
)

// PluginPkg is the import path of the provider's plugin main, for
// providertest.BuildPlugin.
const PluginPkg = "github.com/sextant-dev/sextant/plugins/anthropic/plugin"

// TestKey is the API key every case sends. No error may contain it.
const TestKey = "sk-ant-api03-test-abcdef0123456789"

// Spec is what this provider's suite fills into the shared harness.
var Spec = providertest.Spec{Key: TestKey, Suffix: "", Endpoint: "/v1/messages"}

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
		w.Header().Set("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

type block struct{ Type, Text string }

// message is a Messages API answer.
func message(stop string, in, out int, blocks ...block) string {
	content := []any{}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			content = append(content, map[string]any{"type": "text", "text": b.Text})
		case "thinking":
			content = append(content, map[string]any{"type": "thinking", "thinking": b.Text, "signature": "EqQBCgIYAh"})
		case "tool_use": // Text is "id name input"
			f := strings.SplitN(b.Text, " ", 3)
			content = append(content, map[string]any{"type": "tool_use", "id": f[0], "name": f[1], "input": json.RawMessage(f[2])})
		}
	}
	b, _ := json.Marshal(map[string]any{
		"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
		"model": "claude-sonnet-4-5-20250929", "content": content,
		"stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": out,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "service_tier": "standard"},
	})
	return string(b)
}

func text(s string) block { return block{"text", s} }

func toolUse(id, name, input string) block { return block{"tool_use", id + " " + name + " " + input} }

var yes, no = true, false

// Tools are the tools the tool cases offer.
var Tools = []sdk.ToolSpec{
	{Name: "get_weather", Description: "Current weather of a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "get_time"},
}

// ToolMsgs is a conversation with a round of tool calls in it: the
// assistant's calls (after some text), their answers (one a failure),
// and a new question.
var ToolMsgs = []sdk.Message{
	{Role: "system", Content: "Use the tools."},
	{Role: "user", Content: "Weather in Lyon, and the time?"},
	{Role: "assistant", Content: "Looking.", ToolCalls: []sdk.ToolCall{{ID: "toolu_0", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Lyon"}`)}, {ID: "toolu_9", Name: "get_time"}}},
	{Role: "tool", ToolCallID: "toolu_0", Content: "12°C, rain"},
	{Role: "tool", ToolCallID: "toolu_9", Content: "clock unavailable", IsError: true},
	{Role: "assistant", Content: "Lyon: 12°C."},
	{Role: "user", Content: "Now Paris."},
}

func apiError(typ, message string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message},
		"request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
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
	body := message("end_turn", 10, 10, text("Hello there, this answer will be cut"))
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

// wantAPIHeaders checks what every request must carry.
func wantAPIHeaders(t *testing.T, got received) {
	t.Helper()
	wantHeader(t, got, "x-api-key", TestKey)
	wantHeader(t, got, "anthropic-version", "2023-06-01")
	if v, ok := got.Header["Authorization"]; ok {
		t.Errorf("Authorization sent: %q", v)
	}
}

func temp(f float64) *float64 { return &f }

// Model is the model most cases ask for.
const Model = "claude-sonnet-4-5"

// Msgs is a system and a user message, what most cases send.
var Msgs = []sdk.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Say hello."}}

var user = []sdk.Message{{Role: "user", Content: "Say hello."}}

// Cases is the suite every transport runs. It takes t for the closed port
// the connection-refused case dials.
func Cases(t *testing.T) []chatCase {
	refused := closedPort(t)
	cut := `{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"Hel`
	return []chatCase{
		{
			Name:  "success",
			Req:   sdk.ChatRequest{Model: Model, Messages: Msgs, Temperature: temp(0.3), MaxTokens: 200, Stop: []string{"END"}},
			Serve: reply(200, nil, message("end_turn", 12, 5, text("Hello there."))),
			Check: func(t *testing.T, got received) {
				wantAPIHeaders(t, got)
				wantHeader(t, got, "Accept", "application/json")
				wantBody(t, got, "model", Model)
				wantBody(t, got, "max_tokens", 200)
				wantBody(t, got, "system", "You are terse.")
				wantBody(t, got, "messages", user)
				wantBody(t, got, "temperature", 0.3)
				wantBody(t, got, "stop_sequences", []string{"END"})
				if len(got.Body) != 6 {
					t.Errorf("body has %d fields, want 6: %v", len(got.Body), got.Body)
				}
			},
			Want: &sdk.ChatResponse{Text: "Hello there.", Usage: sdk.Usage{InputTokens: 12, OutputTokens: 5}, FinishReason: "stop", Model: "claude-sonnet-4-5-20250929", ID: "msg_01XFDUDYJgAACzvnptvVoYEL"},
		},
		{
			Name: "defaults-and-system-messages",
			Req: sdk.ChatRequest{Model: Model, Messages: []sdk.Message{
				{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Hi."}, {Role: "assistant", Content: "Hello."},
				{Role: "system", Content: "Answer in French."}, {Role: "user", Content: "Again."}}},
			BaseURL: "{{FAKE}}/defaults-and-system-messages/v1/", // a trailing /v1 is not doubled
			Calls:   1,
			Serve:   reply(200, nil, message("stop_sequence", 30, 2, text("Bonjour."))),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "max_tokens", 1024)
				wantBody(t, got, "system", "You are terse.\n\nAnswer in French.")
				wantBody(t, got, "messages", []sdk.Message{{Role: "user", Content: "Hi."}, {Role: "assistant", Content: "Hello."}, {Role: "user", Content: "Again."}})
				wantBody(t, got, "temperature", nil)
				wantBody(t, got, "stop_sequences", nil)
			},
			Want: &sdk.ChatResponse{Text: "Bonjour.", Usage: sdk.Usage{InputTokens: 30, OutputTokens: 2}, FinishReason: "stop", Model: "claude-sonnet-4-5-20250929", ID: "msg_01XFDUDYJgAACzvnptvVoYEL"},
		},
		{
			Name:  "json-mode",
			Req:   sdk.ChatRequest{Model: Model, Messages: Msgs, JSON: true},
			Serve: reply(200, nil, message("end_turn", 40, 7, text(`"action":"archive"}`))),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "system", "You are terse.\n\n"+anthropic.JSONInstruction)
				wantBody(t, got, "messages", append(append([]sdk.Message{}, user...), sdk.Message{Role: "assistant", Content: "{"}))
			},
			Want: &sdk.ChatResponse{Text: `{"action":"archive"}`, Usage: sdk.Usage{InputTokens: 40, OutputTokens: 7}, FinishReason: "stop", Model: "claude-sonnet-4-5-20250929", ID: "msg_01XFDUDYJgAACzvnptvVoYEL"},
		},
		{
			Name:   "json-mode-without-prefill",
			Req:    sdk.ChatRequest{Model: Model, Messages: user, JSON: true},
			Config: map[string]any{"json_prefill": false},
			Serve:  reply(200, nil, message("end_turn", 40, 8, text(`{"action":"archive"}`))),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "system", anthropic.JSONInstruction)
				wantBody(t, got, "messages", user)
			},
			Want: &sdk.ChatResponse{Text: `{"action":"archive"}`, Usage: sdk.Usage{InputTokens: 40, OutputTokens: 8}, FinishReason: "stop", Model: "claude-sonnet-4-5-20250929", ID: "msg_01XFDUDYJgAACzvnptvVoYEL"},
		},
		{
			Name: "blocks-joined-and-max-tokens",
			Req:  sdk.ChatRequest{Model: Model, Messages: user, MaxTokens: 16},
			Serve: reply(200, nil, `{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",`+
				`"content":[{"type":"thinking","thinking":"hmm","signature":"x"},{"type":"text","text":"Hello"},{"type":"text","text":" wor"}],`+
				`"stop_reason":"max_tokens","stop_sequence":null,`+
				`"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":16}}`),
			Want: &sdk.ChatResponse{Text: "Hello wor", Usage: sdk.Usage{InputTokens: 2103, OutputTokens: 16}, FinishReason: "length", Model: "claude-sonnet-4-5-20250929", ID: "msg_02"},
		},
		{
			Name: "rate-limited-retry-after-seconds",
			Req:  sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve: reply(429, map[string]string{"retry-after": "30", "anthropic-ratelimit-input-tokens-remaining": "0"},
				apiError("rate_limit_error", "This request would exceed the rate limit for your organization of 30,000 input tokens per minute.")),
			WantCode:  sdk.CodeRateLimited,
			WantMsg:   "anthropic: http 429 rate_limit_error: This request would exceed the rate limit for your organization of 30,000 input tokens per minute.",
			WantRetry: 30 * time.Second,
		},
		{
			Name: "rate-limited-retry-after-date",
			Req:  sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve: func(w http.ResponseWriter, r *http.Request) {
				at := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
				reply(429, map[string]string{"retry-after": at}, apiError("rate_limit_error", "Number of requests has exceeded your per-minute rate limit"))(w, r)
			},
			WantCode:  sdk.CodeRateLimited,
			WantMsg:   "anthropic: http 429 rate_limit_error: Number of requests has exceeded your per-minute rate limit",
			WantRetry: 1 * time.Second, MaxRetry: 3 * time.Second,
		},
		{
			Name:      "overloaded-529",
			Req:       sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve:     reply(529, map[string]string{"retry-after": "5"}, apiError("overloaded_error", "Overloaded")),
			WantCode:  sdk.CodeUnavailable,
			WantMsg:   "anthropic: http 529 overloaded_error: Overloaded",
			WantRetry: 5 * time.Second,
		},
		{
			Name:     "server-error",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve:    reply(500, nil, apiError("api_error", "Internal server error")),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "anthropic: http 500 api_error: Internal server error",
		},
		{
			Name:     "gateway-timeout-html",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve:    reply(504, map[string]string{"Content-Type": "text/html"}, "<html><body>504 Gateway Time-out</body></html>\n"),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "anthropic: http 504: <html><body>504 Gateway Time-out</body></html>",
		},
		{
			Name: "unauthorized-echoing-the-key",
			Req:  sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve: func(w http.ResponseWriter, r *http.Request) {
				reply(401, nil, apiError("authentication_error", "invalid x-api-key: "+r.Header.Get("x-api-key")))(w, r)
			},
			WantCode: sdk.CodeAuth,
			WantMsg:  "anthropic: http 401 authentication_error: invalid x-api-key: [redacted]",
		},
		{
			Name:     "permission",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve:    reply(403, nil, apiError("permission_error", "Your API key does not have permission to use the specified resource.")),
			WantCode: sdk.CodeAuth,
			WantMsg:  "anthropic: http 403 permission_error: Your API key does not have permission to use the specified resource.",
		},
		{
			Name:     "invalid-request",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs, MaxTokens: 100000},
			Serve:    reply(400, nil, apiError("invalid_request_error", "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929")),
			WantCode: sdk.CodeBadRequest,
			WantMsg:  "anthropic: http 400 invalid_request_error: max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929",
		},
		{
			Name:     "model-not-found",
			Req:      sdk.ChatRequest{Model: "claude-9", Messages: Msgs},
			Serve:    reply(404, nil, apiError("not_found_error", "model: claude-9")),
			WantCode: sdk.CodeBadRequest,
			WantMsg:  "anthropic: http 404 not_found_error: model: claude-9",
		},
		{
			Name:     "request-too-large",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve:    reply(413, nil, apiError("request_too_large", "Request exceeds the maximum allowed number of bytes.")),
			WantCode: sdk.CodeBadRequest,
			WantMsg:  "anthropic: http 413 request_too_large: Request exceeds the maximum allowed number of bytes.",
		},
		{
			Name:       "slow-answer",
			Req:        sdk.ChatRequest{Model: Model, Messages: Msgs},
			Deadline:   time.Second,
			Serve:      slow,
			WantCode:   sdk.CodeTimeout,
			WantMsg:    "anthropic: POST {{URL}}/v1/messages: no response before the deadline",
			NativeOnly: true,
		},
		{
			Name:     "truncated-body",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve:    truncated,
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "anthropic: POST {{URL}}/v1/messages: response body truncated (unexpected EOF)",
		},
		{
			Name:     "malformed-json",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve:    reply(200, nil, cut),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  fmt.Sprintf("anthropic: malformed response (http 200, %d bytes): unexpected end of JSON input", len(cut)),
		},
		{
			Name:     "html-instead-of-json",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve:    reply(200, map[string]string{"Content-Type": "text/html"}, "<html>captive portal</html>"),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "anthropic: malformed response (http 200, 27 bytes): invalid character '<' looking for beginning of value",
		},
		{
			Name:     "empty-object",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			Serve:    reply(200, nil, "{}"),
			WantCode: sdk.CodeUnavailable,
			WantMsg:  "anthropic: malformed response (http 200, 2 bytes): no content and no stop_reason",
		},
		{
			Name:     "connection-refused",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			BaseURL:  "http://" + refused,
			WantCode: sdk.CodeUnavailable,
			WantMsg:  `anthropic: http POST {{URL}}/v1/messages: Post "{{URL}}/v1/messages": dial tcp {{HOSTPORT}}: connect: connection refused`,
		},
		{
			Name:     "no-model",
			Req:      sdk.ChatRequest{Messages: Msgs},
			Calls:    -1,
			WantCode: sdk.CodeBadRequest,
			WantMsg:  "anthropic: no model (set model in the provider block)",
		},
		{
			Name:     "no-key",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			Config:   map[string]any{"api_key": nil},
			Calls:    -1,
			WantCode: sdk.CodeAuth,
			WantMsg:  "anthropic: no API key (set api_key_env in the provider block)",
		},
		{
			Name: "tools",
			Req:  sdk.ChatRequest{Model: Model, Messages: ToolMsgs, Tools: Tools, ToolChoice: "get_weather", ParallelToolCalls: &no},
			Serve: reply(200, nil, message("tool_use", 90, 40, text("Checking both."),
				toolUse("toolu_1", "get_weather", `{"city": "Paris"}`), toolUse("toolu_2", "get_time", `{}`))),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "system", "Use the tools.")
				wantBody(t, got, "tools", []any{
					map[string]any{"name": "get_weather", "description": "Current weather of a city.",
						"input_schema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}},
					map[string]any{"name": "get_time", "input_schema": map[string]any{"type": "object"}},
				})
				wantBody(t, got, "tool_choice", map[string]any{"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true})
				wantBody(t, got, "messages", []any{
					map[string]any{"role": "user", "content": "Weather in Lyon, and the time?"},
					map[string]any{"role": "assistant", "content": []any{
						map[string]any{"type": "text", "text": "Looking."},
						map[string]any{"type": "tool_use", "id": "toolu_0", "name": "get_weather", "input": map[string]any{"city": "Lyon"}},
						map[string]any{"type": "tool_use", "id": "toolu_9", "name": "get_time", "input": map[string]any{}}}},
					map[string]any{"role": "user", "content": []any{
						map[string]any{"type": "tool_result", "tool_use_id": "toolu_0", "content": "12°C, rain"},
						map[string]any{"type": "tool_result", "tool_use_id": "toolu_9", "content": "clock unavailable", "is_error": true}}},
					map[string]any{"role": "assistant", "content": "Lyon: 12°C."},
					map[string]any{"role": "user", "content": "Now Paris."},
				})
			},
			Want: &sdk.ChatResponse{Text: "Checking both.", FinishReason: "tool_calls", Model: "claude-sonnet-4-5-20250929", ID: "msg_01XFDUDYJgAACzvnptvVoYEL",
				Usage: sdk.Usage{InputTokens: 90, OutputTokens: 40}, ToolCalls: []sdk.ToolCall{
					{ID: "toolu_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}, {ID: "toolu_2", Name: "get_time", Arguments: json.RawMessage(`{}`)}}},
		},
		{
			Name:  "tool-choice-required",
			Req:   sdk.ChatRequest{Model: Model, Messages: Msgs, Tools: Tools[1:], ToolChoice: "required", ParallelToolCalls: &yes},
			Serve: reply(200, nil, message("tool_use", 20, 10, toolUse("toolu_5", "get_time", `{}`))),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "tool_choice", map[string]any{"type": "any"})
			},
			Want: &sdk.ChatResponse{FinishReason: "tool_calls", Model: "claude-sonnet-4-5-20250929", ID: "msg_01XFDUDYJgAACzvnptvVoYEL",
				Usage: sdk.Usage{InputTokens: 20, OutputTokens: 10}, ToolCalls: []sdk.ToolCall{{ID: "toolu_5", Name: "get_time", Arguments: json.RawMessage(`{}`)}}},
		},
		{
			Name:  "tool-choice-none-and-serial",
			Req:   sdk.ChatRequest{Model: Model, Messages: Msgs, Tools: Tools[1:], ToolChoice: "none", ParallelToolCalls: &no},
			Serve: reply(200, nil, message("end_turn", 20, 2, text("Hello."))),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "tool_choice", map[string]any{"type": "none"}) // none takes no disable_parallel_tool_use
			},
			Want: &sdk.ChatResponse{Text: "Hello.", FinishReason: "stop", Model: "claude-sonnet-4-5-20250929", ID: "msg_01XFDUDYJgAACzvnptvVoYEL", Usage: sdk.Usage{InputTokens: 20, OutputTokens: 2}},
		},
		{
			Name:  "serial-tools-auto",
			Req:   sdk.ChatRequest{Model: Model, Messages: Msgs, Tools: Tools[1:], ParallelToolCalls: &no},
			Serve: reply(200, nil, message("end_turn", 20, 2, text("Hello."))),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "tool_choice", map[string]any{"type": "auto", "disable_parallel_tool_use": true})
			},
			Want: &sdk.ChatResponse{Text: "Hello.", FinishReason: "stop", Model: "claude-sonnet-4-5-20250929", ID: "msg_01XFDUDYJgAACzvnptvVoYEL", Usage: sdk.Usage{InputTokens: 20, OutputTokens: 2}},
		},
		{
			Name:  "tool-choice-without-tools",
			Req:   sdk.ChatRequest{Model: Model, Messages: Msgs, ToolChoice: "auto", ParallelToolCalls: &no},
			Serve: reply(200, nil, message("end_turn", 20, 2, text("Hello."))),
			Check: func(t *testing.T, got received) {
				wantBody(t, got, "tools", nil)
				wantBody(t, got, "tool_choice", nil)
			},
			Want: &sdk.ChatResponse{Text: "Hello.", FinishReason: "stop", Model: "claude-sonnet-4-5-20250929", ID: "msg_01XFDUDYJgAACzvnptvVoYEL", Usage: sdk.Usage{InputTokens: 20, OutputTokens: 2}},
		},
		{
			Name:     "unknown-role",
			Req:      sdk.ChatRequest{Model: Model, Messages: append(append([]sdk.Message{}, Msgs...), sdk.Message{Role: "function", Content: "42"})},
			Calls:    -1,
			WantCode: sdk.CodeBadRequest,
			WantMsg:  `anthropic: message 3: role "function" not supported (want system, user, assistant or tool)`,
		},
		{
			Name:     "bad-config",
			Req:      sdk.ChatRequest{Model: Model, Messages: Msgs},
			Config:   map[string]any{"json_prefill": "no"},
			Calls:    -1,
			WantCode: sdk.CodeBadRequest,
			WantMsg:  `anthropic: config json_prefill: want true or false, got string "no"`,
		},
	}
}
