package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
const testKey = "sk-test-abcdef0123456789"

// received is what the fake server got.
type received struct {
	Method, Path string
	Header       http.Header
	Body         map[string]any
}

// fakeOpenAI is a real HTTP server speaking the Chat Completions wire
// format. The first path segment names the case, so that one server (one
// host:port, which a wasm grant can name) serves every case:
// base_url = URL/<case>/v1.
type fakeOpenAI struct {
	*httptest.Server
	mu    sync.Mutex
	got   map[string][]received
	serve map[string]http.HandlerFunc
}

func newFake(t *testing.T, cases []chatCase) *fakeOpenAI {
	f := &fakeOpenAI{got: map[string][]received{}, serve: map[string]http.HandlerFunc{}}
	for _, c := range cases {
		if c.serve != nil {
			f.serve[c.name] = c.serve
		}
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeOpenAI) handle(w http.ResponseWriter, r *http.Request) {
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

func (f *fakeOpenAI) received(name string) []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[name]
}

func (f *fakeOpenAI) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = map[string][]received{}
}

// hostPort is the server's host:port, as a wasm grant names it.
func (f *fakeOpenAI) hostPort() string { return strings.TrimPrefix(f.URL, "http://") }

// chatCase is one exchange with the fake server.
type chatCase struct {
	name   string
	req    sdk.ChatRequest
	config map[string]any // merged over base_url and api_key
	// baseURL replaces URL/<name>/v1 ({{FAKE}} stands for the server's URL).
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

func (c *chatCase) baseFor(f *fakeOpenAI) string {
	if c.baseURL != "" {
		return strings.ReplaceAll(c.baseURL, "{{FAKE}}", f.URL)
	}
	return f.URL + "/" + c.name + "/v1"
}

// runSuite runs every case against p and returns the outcomes by name.
func runSuite(t *testing.T, p sdk.Provider, f *fakeOpenAI, cases []chatCase, wasm bool) map[string]outcome {
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
				if r.Method != http.MethodPost || r.Path != "/"+c.name+"/v1/chat/completions" {
					t.Errorf("request line %s %s, want POST /%s/v1/chat/completions", r.Method, r.Path, c.name)
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

var msgs = []sdk.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Say hello."}}

// cases is the suite every transport runs.
func cases(t *testing.T) []chatCase {
	refused := closedPort(t)
	cut := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hel`
	noChoices := `{"id":"chatcmpl-2","object":"chat.completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}`
	return []chatCase{
		{
			name: "success",
			req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs, Temperature: temp(0.2), MaxTokens: 50, Stop: []string{"END"}},
			config: map[string]any{
				"organization": "org-sextant", "project": "proj_42",
			},
			serve: reply(200, map[string]string{"x-request-id": "req_1"}, completion("Hello there.", "stop", 12, 5)),
			check: func(t *testing.T, got received) {
				wantHeader(t, got, "Authorization", "Bearer "+testKey)
				wantHeader(t, got, "OpenAI-Organization", "org-sextant")
				wantHeader(t, got, "OpenAI-Project", "proj_42")
				wantHeader(t, got, "Accept", "application/json")
				wantBody(t, got, "model", "gpt-4o-mini")
				wantBody(t, got, "messages", msgs)
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
			want: &sdk.ChatResponse{Text: "Hello there.", Usage: sdk.Usage{InputTokens: 12, OutputTokens: 5}, FinishReason: "stop", Model: "gpt-4o-mini-2024-07-18"},
		},
		{
			name:  "json-mode",
			req:   sdk.ChatRequest{Model: "gpt-4o-mini", Messages: []sdk.Message{{Role: "user", Content: "Reply as JSON {\"action\":...}"}}, JSON: true},
			serve: reply(200, nil, completion(`{"action":"archive"}`, "stop", 20, 6)),
			check: func(t *testing.T, got received) {
				wantBody(t, got, "response_format", map[string]any{"type": "json_object"})
				wantBody(t, got, "max_tokens", nil) // zero: left to the server
				wantBody(t, got, "temperature", nil)
			},
			want: &sdk.ChatResponse{Text: `{"action":"archive"}`, Usage: sdk.Usage{InputTokens: 20, OutputTokens: 6}, FinishReason: "stop", Model: "gpt-4o-mini-2024-07-18"},
		},
		{
			name:   "max-completion-tokens",
			req:    sdk.ChatRequest{Model: "o3-mini", Messages: msgs, MaxTokens: 300},
			config: map[string]any{"max_tokens_param": "max_completion_tokens"},
			serve:  reply(200, nil, completion("Hi.", "length", 9, 300)),
			check: func(t *testing.T, got received) {
				wantBody(t, got, "max_completion_tokens", 300)
				wantBody(t, got, "max_tokens", nil)
			},
			want: &sdk.ChatResponse{Text: "Hi.", Usage: sdk.Usage{InputTokens: 9, OutputTokens: 300}, FinishReason: "length", Model: "gpt-4o-mini-2024-07-18"},
		},
		{
			name:   "local-server-without-key",
			req:    sdk.ChatRequest{Model: "llama3.1:8b", Messages: msgs},
			config: map[string]any{"api_key": nil},
			serve:  reply(200, nil, `{"id":"chatcmpl-9","object":"chat.completion","created":1,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":26,"completion_tokens":3,"total_tokens":29}}`),
			check: func(t *testing.T, got received) {
				if v, ok := got.Header["Authorization"]; ok {
					t.Errorf("Authorization sent without a key: %q", v)
				}
			},
			want: &sdk.ChatResponse{Text: "Hello!", Usage: sdk.Usage{InputTokens: 26, OutputTokens: 3}, FinishReason: "stop", Model: "llama3.1:8b"},
		},
		{
			name:   "stream",
			req:    sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs, MaxTokens: 20},
			config: map[string]any{"stream": true},
			serve: sse(
				chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil),
				chunk(map[string]any{"content": "Hello"}, nil),
				chunk(map[string]any{"content": " there"}, nil),
				chunk(map[string]any{"content": "."}, nil),
				chunk(map[string]any{}, "stop"),
				`{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
				"[DONE]",
			),
			check: func(t *testing.T, got received) {
				wantBody(t, got, "stream", true)
				wantBody(t, got, "stream_options", map[string]any{"include_usage": true})
				wantBody(t, got, "max_tokens", 20)
				wantHeader(t, got, "Accept", "text/event-stream")
			},
			want: &sdk.ChatResponse{Text: "Hello there.", Usage: sdk.Usage{InputTokens: 12, OutputTokens: 3}, FinishReason: "stop", Model: "gpt-4o-mini-2024-07-18"},
		},
		{
			name:     "stream-cut-short",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			config:   map[string]any{"stream": true},
			serve:    sse(chunk(map[string]any{"role": "assistant", "content": "Hel"}, nil), chunk(map[string]any{"content": "lo"}, nil)),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "openai: stream cut short after 2 events (no finish_reason, no [DONE])",
		},
		{
			name:     "stream-error-event",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			config:   map[string]any{"stream": true},
			serve:    sse(chunk(map[string]any{"content": "Hel"}, nil), `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "openai: stream error server_error: The server had an error while processing your request. Sorry about that!",
		},
		{
			name: "rate-limited-retry-after-seconds",
			req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve: reply(429, map[string]string{"Retry-After": "7"},
				apiError("Rate limit reached for gpt-4o-mini in organization org-sextant on requests per min (RPM): Limit 3, Used 3, Requested 1.", "requests", "rate_limit_exceeded")),
			wantCode:  sdk.CodeRateLimited,
			wantMsg:   "openai: http 429 rate_limit_exceeded: Rate limit reached for gpt-4o-mini in organization org-sextant on requests per min (RPM): Limit 3, Used 3, Requested 1.",
			wantRetry: 7 * time.Second,
		},
		{
			name: "rate-limited-retry-after-ms",
			req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve: reply(429, map[string]string{"Retry-After": "2", "retry-after-ms": "1500"},
				apiError("Rate limit reached for gpt-4o-mini on tokens per min (TPM).", "tokens", "rate_limit_exceeded")),
			wantCode:  sdk.CodeRateLimited,
			wantMsg:   "openai: http 429 rate_limit_exceeded: Rate limit reached for gpt-4o-mini on tokens per min (TPM).",
			wantRetry: 1500 * time.Millisecond,
		},
		{
			name: "rate-limited-retry-after-date",
			req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve: func(w http.ResponseWriter, r *http.Request) {
				at := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
				reply(429, map[string]string{"Retry-After": at}, apiError("Too many requests", "requests", "rate_limit_exceeded"))(w, r)
			},
			wantCode:  sdk.CodeRateLimited,
			wantMsg:   "openai: http 429 rate_limit_exceeded: Too many requests",
			wantRetry: 1 * time.Second, maxRetry: 3 * time.Second,
		},
		{
			name: "insufficient-quota",
			req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve: reply(429, map[string]string{"Retry-After": "20"},
				apiError("You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", "insufficient_quota")),
			wantCode: sdk.CodeAuth,
			wantMsg:  "openai: http 429 insufficient_quota: You exceeded your current quota, please check your plan and billing details.",
		},
		{
			name:     "server-error",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve:    reply(500, nil, apiError("The server had an error while processing your request. Sorry about that!", "server_error", nil)),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "openai: http 500 server_error: The server had an error while processing your request. Sorry about that!",
		},
		{
			name:     "bad-gateway-html",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve:    reply(502, map[string]string{"Content-Type": "text/html"}, "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n"),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "openai: http 502: <html> <head><title>502 Bad Gateway</title></head> <body> <center><h1>502 Bad Gateway</h1></center> </body> </html>",
		},
		{
			name:     "service-unavailable-empty",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve:    reply(503, map[string]string{"Retry-After": "3"}, ""),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "openai: http 503 (empty body)", wantRetry: 3 * time.Second,
		},
		{
			name:     "request-timeout-408",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve:    reply(408, nil, apiError("Request timed out.", "timeout", nil)),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "openai: http 408 timeout: Request timed out.",
		},
		{
			name: "unauthorized-echoing-the-key",
			req:  sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve: func(w http.ResponseWriter, r *http.Request) {
				key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				reply(401, nil, apiError("Incorrect API key provided: "+key+". You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key"))(w, r)
			},
			wantCode: sdk.CodeAuth,
			wantMsg:  "openai: http 401 invalid_api_key: Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys.",
		},
		{
			name:     "forbidden",
			req:      sdk.ChatRequest{Model: "gpt-4o", Messages: msgs},
			serve:    reply(403, nil, apiError("Project `proj_42` does not have access to model `gpt-4o`", "invalid_request_error", "model_not_found")),
			wantCode: sdk.CodeAuth,
			wantMsg:  "openai: http 403 model_not_found: Project `proj_42` does not have access to model `gpt-4o`",
		},
		{
			name:     "bad-request",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs, JSON: true},
			serve:    reply(400, nil, apiError("'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.", "invalid_request_error", nil)),
			wantCode: sdk.CodeBadRequest,
			wantMsg:  "openai: http 400 invalid_request_error: 'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
		},
		{
			name:     "model-not-found-ollama",
			req:      sdk.ChatRequest{Model: "llama9", Messages: msgs},
			serve:    reply(404, nil, `{"error":"model \"llama9\" not found, try pulling it first"}`),
			wantCode: sdk.CodeBadRequest,
			wantMsg:  `openai: http 404: model "llama9" not found, try pulling it first`,
		},
		{
			name:     "unprocessable-vllm",
			req:      sdk.ChatRequest{Model: "meta-llama/Llama-3.1-8B-Instruct", Messages: msgs, MaxTokens: 1 << 20},
			serve:    reply(422, nil, `{"object":"error","message":"max_tokens must be at most 131072","type":"BadRequestError","param":null,"code":422}`),
			wantCode: sdk.CodeBadRequest,
			wantMsg:  "openai: http 422 BadRequestError: max_tokens must be at most 131072",
		},
		{
			name:       "slow-answer",
			req:        sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			deadline:   time.Second,
			serve:      slow,
			wantCode:   sdk.CodeTimeout,
			wantMsg:    "openai: POST {{URL}}/chat/completions: no response before the deadline",
			nativeOnly: true,
		},
		{
			name:     "truncated-body",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve:    truncated,
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "openai: POST {{URL}}/chat/completions: response body truncated (unexpected EOF)",
		},
		{
			name:     "malformed-json",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve:    reply(200, nil, cut),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  fmt.Sprintf("openai: malformed response (http 200, %d bytes): unexpected end of JSON input", len(cut)),
		},
		{
			name:     "html-instead-of-json",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve:    reply(200, map[string]string{"Content-Type": "text/html"}, "<html>captive portal</html>"),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  "openai: malformed response (http 200, 27 bytes): invalid character '<' looking for beginning of value",
		},
		{
			name:     "no-choices",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			serve:    reply(200, nil, noChoices),
			wantCode: sdk.CodeUnavailable,
			wantMsg:  fmt.Sprintf("openai: malformed response (http 200, %d bytes): no choices", len(noChoices)),
		},
		{
			name:     "connection-refused",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			baseURL:  "http://" + refused + "/v1",
			wantCode: sdk.CodeUnavailable,
			wantMsg:  `openai: http POST {{URL}}/chat/completions: Post "{{URL}}/chat/completions": dial tcp {{HOSTPORT}}: connect: connection refused`,
		},
		{
			name:     "bad-config",
			req:      sdk.ChatRequest{Model: "gpt-4o-mini", Messages: msgs},
			config:   map[string]any{"stream": "yes"},
			calls:    -1,
			wantCode: sdk.CodeBadRequest,
			wantMsg:  `openai: config stream: want true or false, got string "yes"`,
		},
	}
}
