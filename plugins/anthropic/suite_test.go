package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sextant-dev/sextant/plugins/anthropic"
	"github.com/sextant-dev/sextant/sdk"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// testKey is the API key every case sends. No error may contain it.
const testKey = "sk-ant-api03-test-abcdef0123456789"

// received is what the fake server got.
type received struct {
	Method, Path string
	Header       http.Header
	Body         map[string]any
}

// fakeAnthropic is a real HTTP server speaking the Messages API wire
// format. The first path segment names the case, so that one server (one
// host:port, which a wasm grant can name) serves every case:
// base_url = URL/<case>.
type fakeAnthropic struct {
	*httptest.Server
	mu    sync.Mutex
	got   map[string][]received
	serve map[string]http.HandlerFunc
}

func newFake(t *testing.T, cases []chatCase) *fakeAnthropic {
	f := &fakeAnthropic{got: map[string][]received{}, serve: map[string]http.HandlerFunc{}}
	for _, c := range cases {
		if c.serve != nil {
			f.serve[c.name] = c.serve
		}
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAnthropic) handle(w http.ResponseWriter, r *http.Request) {
	name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.got[name] = append(f.got[name], received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	h := f.serve[name]
	f.mu.Unlock()
	if h == nil {
		http.Error(w, "no such case", http.StatusTeapot)
		return
	}
	h(w, r)
}

func (f *fakeAnthropic) received(name string) []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[name]
}

func (f *fakeAnthropic) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = map[string][]received{}
}

// hostPort is the server's host:port, as a wasm grant names it.
func (f *fakeAnthropic) hostPort() string { return strings.TrimPrefix(f.URL, "http://") }

// chatCase is one exchange with the fake server.
type chatCase struct {
	name   string
	req    sdk.ChatRequest
	config map[string]any // merged over base_url and api_key
	// baseURL replaces URL/<name> ({{FAKE}} stands for the server's URL).
	baseURL  string
	deadline time.Duration // default 10s
	serve    http.HandlerFunc
	// calls is the number of requests the server must see (default 1).
	calls int
	check func(t *testing.T, got received)

	want *sdk.ChatResponse
	// wantErr: code, exact message ({{URL}} is the case's base_url,
	// {{HOSTPORT}} its host:port) and retry-after range.
	wantCode            sdk.Code
	wantMsg             string
	wantRetry, maxRetry time.Duration
	// nativeOnly: the case needs the plugin to see the caller's deadline,
	// which a wasm guest does not (the host's call deadline ends it there).
	nativeOnly bool
}

// outcome is what a call came back with, comparable across transports.
type outcome struct {
	Resp  *sdk.ChatResponse
	Code  sdk.Code
	Msg   string
	Retry time.Duration
}

func (c *chatCase) baseFor(f *fakeAnthropic) string {
	if c.baseURL != "" {
		return strings.ReplaceAll(c.baseURL, "{{FAKE}}", f.URL)
	}
	return f.URL + "/" + c.name
}

// runSuite runs every case against p and returns the outcomes by name.
func runSuite(t *testing.T, p sdk.Provider, f *fakeAnthropic, cases []chatCase, wasm bool) map[string]outcome {
	t.Helper()
	out := map[string]outcome{}
	for _, c := range cases {
		if wasm && c.nativeOnly {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			f.reset()
			base := c.baseFor(f)
			cfg := map[string]any{"base_url": base, "api_key": testKey}
			for k, v := range c.config {
				if v == nil {
					delete(cfg, k)
				} else {
					cfg[k] = v
				}
			}
			req := c.req
			req.Config = cfg
			d := c.deadline
			if d == 0 {
				d = 10 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			resp, err := p.Chat(ctx, &req)

			var o outcome
			if err != nil {
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("the API key leaked into the error: %v", err)
				}
				var e *sdk.Error
				if !errors.As(err, &e) {
					t.Fatalf("error is not an *sdk.Error: %T %v", err, err)
				}
				o = outcome{Code: e.Code, Msg: e.Message, Retry: e.RetryAfter}
			} else {
				o.Resp = resp
			}

			switch {
			case c.wantCode != "":
				if err == nil {
					t.Fatalf("got %+v, want a %s error", resp, c.wantCode)
				}
				want := strings.NewReplacer("{{URL}}", base, "{{HOSTPORT}}", strings.Split(strings.TrimPrefix(base, "http://"), "/")[0]).Replace(c.wantMsg)
				if o.Code != c.wantCode || o.Msg != want {
					t.Errorf("got error\n  %s: %q\nwant\n  %s: %q", o.Code, o.Msg, c.wantCode, want)
				}
				maxRetry := c.maxRetry
				if maxRetry == 0 {
					maxRetry = c.wantRetry
				}
				if o.Retry < c.wantRetry || o.Retry > maxRetry {
					t.Errorf("retry-after %s, want %s..%s", o.Retry, c.wantRetry, maxRetry)
				}
				if o.Retry != c.wantRetry {
					o.Retry = -1 // a range: not compared across transports
				}
			case err != nil:
				t.Fatalf("unexpected error: %v", err)
			case !reflect.DeepEqual(resp, c.want):
				t.Errorf("got  %+v\nwant %+v", resp, c.want)
			}

			got := f.received(c.name)
			calls := c.calls
			switch {
			case calls < 0:
				calls = 0
			case calls == 0:
				calls = 1
			}
			if (c.baseURL == "" || c.calls != 0) && len(got) != calls {
				t.Fatalf("server saw %d requests, want %d", len(got), calls)
			}
			if len(got) > 0 {
				r := got[0]
				if r.Method != http.MethodPost || r.Path != "/"+c.name+"/v1/messages" {
					t.Errorf("request line %s %s, want POST /%s/v1/messages", r.Method, r.Path, c.name)
				}
				if ct := r.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				if c.check != nil {
					c.check(t, r)
				}
			}
			out[c.name] = o
		})
	}
	return out
}

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
	wantHeader(t, got, "x-api-key", testKey)
	wantHeader(t, got, "anthropic-version", "2023-06-01")
	if v, ok := got.Header["Authorization"]; ok {
		t.Errorf("Authorization sent: %q", v)
	}
}

func temp(f float64) *float64 { return &f }

const model = "claude-sonnet-4-5"

var msgs = []sdk.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Say hello."}}

var user = []sdk.Message{{Role: "user", Content: "Say hello."}}

// cases is the suite every transport runs.
func cases(t *testing.T) []chatCase {
	refused := closedPort(t)
	cut := `{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"Hel`
	return []chatCase{
		{
			name:  "success",
			req:   sdk.ChatRequest{Model: model, Messages: msgs, Temperature: temp(0.3), MaxTokens: 200, Stop: []string{"END"}},
			serve: reply(200, nil, message("end_turn", 12, 5, text("Hello there."))),
			check: func(t *testing.T, got received) {
				wantAPIHeaders(t, got)
				wantHeader(t, got, "Accept", "application/json")
				wantBody(t, got, "model", model)
				wantBody(t, got, "max_tokens", 200)
				wantBody(t, got, "system", "You are terse.")
				wantBody(t, got, "messages", user)
				wantBody(t, got, "temperature", 0.3)
				wantBody(t, got, "stop_sequences", []string{"END"})
				if len(got.Body) != 6 {
					t.Errorf("body has %d fields, want 6: %v", len(got.Body), got.Body)
				}
			},
			want: &sdk.ChatResponse{Text: "Hello there.", Usage: sdk.Usage{InputTokens: 12, OutputTokens: 5}, FinishReason: "stop", Model: "claude-sonnet-4-5-20250929"},
		},
		{
			name: "defaults-and-system-messages",
			req: sdk.ChatRequest{Model: model, Messages: []sdk.Message{
				{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Hi."}, {Role: "assistant", Content: "Hello."},
				{Role: "system", Content: "Answer in French."}, {Role: "user", Content: "Again."}}},
			baseURL: "{{FAKE}}/defaults-and-system-messages/v1/", // a trailing /v1 is not doubled
			calls:   1,
			serve:   reply(200, nil, message("stop_sequence", 30, 2, text("Bonjour."))),
			check: func(t *testing.T, got received) {
				wantBody(t, got, "max_tokens", 1024)
				wantBody(t, got, "system", "You are terse.\n\nAnswer in French.")
				wantBody(t, got, "messages", []sdk.Message{{Role: "user", Content: "Hi."}, {Role: "assistant", Content: "Hello."}, {Role: "user", Content: "Again."}})
				wantBody(t, got, "temperature", nil)
				wantBody(t, got, "stop_sequences", nil)
			},
			want: &sdk.ChatResponse{Text: "Bonjour.", Usage: sdk.Usage{InputTokens: 30, OutputTokens: 2}, FinishReason: "stop", Model: "claude-sonnet-4-5-20250929"},
		},
		{
			name:  "json-mode",
			req:   sdk.ChatRequest{Model: model, Messages: msgs, JSON: true},
			serve: reply(200, nil, message("end_turn", 40, 7, text(`"action":"archive"}`))),
			check: func(t *testing.T, got received) {
				wantBody(t, got, "system", "You are terse.\n\n"+anthropic.JSONInstruction)
				wantBody(t, got, "messages", append(append([]sdk.Message{}, user...), sdk.Message{Role: "assistant", Content: "{"}))
			},
			want: &sdk.ChatResponse{Text: `{"action":"archive"}`, Usage: sdk.Usage{InputTokens: 40, OutputTokens: 7}, FinishReason: "stop", Model: "claude-sonnet-4-5-20250929"},
		},
		{
			name:   "json-mode-without-prefill",
			req:    sdk.ChatRequest{Model: model, Messages: user, JSON: true},
			config: map[string]any{"json_prefill": false},
			serve:  reply(200, nil, message("end_turn", 40, 8, text(`{"action":"archive"}`))),
			check: func(t *testing.T, got received) {
				wantBody(t, got, "system", anthropic.JSONInstruction)
				wantBody(t, got, "messages", user)
			},
			want: &sdk.ChatResponse{Text: `{"action":"archive"}`, Usage: sdk.Usage{InputTokens: 40, OutputTokens: 8}, FinishReason: "stop", Model: "claude-sonnet-4-5-20250929"},
		},
		{
			name: "blocks-joined-and-max-tokens",
			req:  sdk.ChatRequest{Model: model, Messages: user, MaxTokens: 16},
			serve: reply(200, nil, `{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",`+
				`"content":[{"type":"thinking","thinking":"hmm","signature":"x"},{"type":"text","text":"Hello"},{"type":"text","text":" wor"}],`+
				`"stop_reason":"max_tokens","stop_sequence":null,`+
				`"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":16}}`),
			want: &sdk.ChatResponse{Text: "Hello wor", Usage: sdk.Usage{InputTokens: 2103, OutputTokens: 16}, FinishReason: "length", Model: "claude-sonnet-4-5-20250929"},
		},
		{
			name: "rate-limited-retry-after-seconds",
			req:  sdk.ChatRequest{Model: model, Messages: msgs},
			serve: reply(429, map[string]string{"retry-after": "30", "anthropic-ratelimit-input-tokens-remaining": "0"},
				apiError("rate_limit_error", "This request would exceed the rate limit for your organization of 30,000 input tokens per minute.")),
			wantCode:  sdk.CodeRateLimited,
			wantMsg:   "anthropic: http 429 rate_limit_error: This request would exceed the rate limit for your organization of 30,000 input tokens per minute.",
			wantRetry: 30 * time.Second,
		},
		{
			name: "rate-limited-retry-after-date",
			req:  sdk.ChatRequest{Model: model, Messages: msgs},
			serve: func(w http.ResponseWriter, r *http.Request) {
				at := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
				reply(429, map[string]string{"retry-after": at}, apiError("rate_limit_error", "Number of requests has exceeded your per-minute rate limit"))(w, r)
			},
			wantCode:  sdk.CodeRateLimited,
			wantMsg:   "anthropic: http 429 rate_limit_error: Number of requests has exceeded your per-minute rate limit",
			wantRetry: 1 * time.Second, maxRetry: 3 * time.Second,
		},
		{
			name:      "overloaded-529",
			req:       sdk.ChatRequest{Model: model, Messages: msgs},
			serve:     reply(529, map[string]string{"retry-after": "5"}, apiError("overloaded_error", "Overloaded")),
			wantCode:  sdk.CodeUnavailable,
			wantMsg:   "anthropic: http 529 overloaded_error: Overloaded",
			wantRetry: 5 * time.Second,
		},
		{
			name:     "server-error",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			serve:    reply(500, nil, apiError("api_error", "Internal server error")),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "anthropic: http 500 api_error: Internal server error",
		},
		{
			name:     "gateway-timeout-html",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			serve:    reply(504, map[string]string{"Content-Type": "text/html"}, "<html><body>504 Gateway Time-out</body></html>\n"),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "anthropic: http 504: <html><body>504 Gateway Time-out</body></html>",
		},
		{
			name: "unauthorized-echoing-the-key",
			req:  sdk.ChatRequest{Model: model, Messages: msgs},
			serve: func(w http.ResponseWriter, r *http.Request) {
				reply(401, nil, apiError("authentication_error", "invalid x-api-key: "+r.Header.Get("x-api-key")))(w, r)
			},
			wantCode: sdk.CodeAuth,
			wantMsg:  "anthropic: http 401 authentication_error: invalid x-api-key: [redacted]",
		},
		{
			name:     "permission",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			serve:    reply(403, nil, apiError("permission_error", "Your API key does not have permission to use the specified resource.")),
			wantCode: sdk.CodeAuth,
			wantMsg:  "anthropic: http 403 permission_error: Your API key does not have permission to use the specified resource.",
		},
		{
			name:     "invalid-request",
			req:      sdk.ChatRequest{Model: model, Messages: msgs, MaxTokens: 100000},
			serve:    reply(400, nil, apiError("invalid_request_error", "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929")),
			wantCode: sdk.CodeBadRequest,
			wantMsg:  "anthropic: http 400 invalid_request_error: max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929",
		},
		{
			name:     "model-not-found",
			req:      sdk.ChatRequest{Model: "claude-9", Messages: msgs},
			serve:    reply(404, nil, apiError("not_found_error", "model: claude-9")),
			wantCode: sdk.CodeBadRequest,
			wantMsg:  "anthropic: http 404 not_found_error: model: claude-9",
		},
		{
			name:     "request-too-large",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			serve:    reply(413, nil, apiError("request_too_large", "Request exceeds the maximum allowed number of bytes.")),
			wantCode: sdk.CodeBadRequest,
			wantMsg:  "anthropic: http 413 request_too_large: Request exceeds the maximum allowed number of bytes.",
		},
		{
			name:       "slow-answer",
			req:        sdk.ChatRequest{Model: model, Messages: msgs},
			deadline:   time.Second,
			serve:      slow,
			wantCode:   sdk.CodeTimeout,
			wantMsg:    "anthropic: POST {{URL}}/v1/messages: no response before the deadline",
			nativeOnly: true,
		},
		{
			name:     "truncated-body",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			serve:    truncated,
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "anthropic: POST {{URL}}/v1/messages: response body truncated (unexpected EOF)",
		},
		{
			name:     "malformed-json",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			serve:    reply(200, nil, cut),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  fmt.Sprintf("anthropic: malformed response (http 200, %d bytes): unexpected end of JSON input", len(cut)),
		},
		{
			name:     "html-instead-of-json",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			serve:    reply(200, map[string]string{"Content-Type": "text/html"}, "<html>captive portal</html>"),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "anthropic: malformed response (http 200, 27 bytes): invalid character '<' looking for beginning of value",
		},
		{
			name:     "empty-object",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			serve:    reply(200, nil, "{}"),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "anthropic: malformed response (http 200, 2 bytes): no content and no stop_reason",
		},
		{
			name:     "connection-refused",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			baseURL:  "http://" + refused,
			wantCode: sdk.CodeUnavailable,
			wantMsg:  `anthropic: http POST {{URL}}/v1/messages: Post "{{URL}}/v1/messages": dial tcp {{HOSTPORT}}: connect: connection refused`,
		},
		{
			name:     "no-model",
			req:      sdk.ChatRequest{Messages: msgs},
			calls:    -1,
			wantCode: sdk.CodeBadRequest,
			wantMsg:  "anthropic: no model (set model in the provider block)",
		},
		{
			name:     "no-key",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			config:   map[string]any{"api_key": nil},
			calls:    -1,
			wantCode: sdk.CodeAuth,
			wantMsg:  "anthropic: no API key (set api_key_env in the provider block)",
		},
		{
			name:     "unknown-role",
			req:      sdk.ChatRequest{Model: model, Messages: append(append([]sdk.Message{}, msgs...), sdk.Message{Role: "tool", Content: "42"})},
			calls:    -1,
			wantCode: sdk.CodeBadRequest,
			wantMsg:  `anthropic: message 3: role "tool" not supported (want system, user or assistant)`,
		},
		{
			name:     "bad-config",
			req:      sdk.ChatRequest{Model: model, Messages: msgs},
			config:   map[string]any{"json_prefill": "no"},
			calls:    -1,
			wantCode: sdk.CodeBadRequest,
			wantMsg:  `anthropic: config json_prefill: want true or false, got string "no"`,
		},
	}
}
