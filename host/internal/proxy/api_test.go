package proxy_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// countTasks counts the store's tasks.
func countTasks(t *testing.T, st *store.Store) int {
	t.Helper()
	ts, err := st.Tasks(context.Background(), store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

// TestAnthropicMessages records a Messages API call and replays it
// streamed: the stream's events are Anthropic's and its text the same.
func TestAnthropicMessages(t *testing.T) {
	up := newUpstream(t)
	_, ps := serverConfig(t, up)
	st := openStore(t, t.TempDir())
	srv := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})
	body := `{"model":"claude-x","max_tokens":64,"system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"metadata":{"user_id":"user-7"}}`
	resp, b := post(t, srv.URL+"/v1/messages", body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var msg struct {
		ID, Type, Role, StopReason string
		Content                    []struct{ Type, Text string }
		Usage                      struct{ InputTokens, OutputTokens int }
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || msg.Role != "assistant" || len(msg.Content) != 1 || msg.Content[0].Text != "You asked: Hi The answer is 4." {
		t.Fatalf("message %s", b)
	}
	if got := resp.Header.Get(proxy.HeaderTask); got != "user-7" {
		t.Errorf("task %q, want user-7 (metadata.user_id)", got)
	}
	// The same call streamed, answered from its recording by header.
	resp, b = post(t, srv.URL+"/v1/messages", strings.Replace(body, `"model"`, `"stream":true,"model"`, 1), map[string]string{proxy.HeaderReplay: "1"})
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if up.calls.Load() != 1 {
		t.Errorf("upstream called %d times, want 1", up.calls.Load())
	}
	var events []string
	var text strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, name)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev struct {
				Type  string
				Delta struct{ Type, Text string }
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event data %q: %v", data, err)
			}
			if ev.Type == "content_block_delta" {
				text.WriteString(ev.Delta.Text)
			}
		}
	}
	want := "message_start content_block_start ping content_block_delta"
	if got := strings.Join(events, " "); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "content_block_stop message_delta message_stop") {
		t.Errorf("events %q", got)
	}
	if text.String() != msg.Content[0].Text {
		t.Errorf("streamed text %q, want %q", text.String(), msg.Content[0].Text)
	}
	if resp.Header.Get(proxy.HeaderRecorded) != "true" {
		t.Errorf("%s = %q, want true", proxy.HeaderRecorded, resp.Header.Get(proxy.HeaderRecorded))
	}
}

// TestBadRequests: a request that is not a JSON object, a bad header or
// an oversized or too deeply nested body is a 4xx in the API's error shape on every route, and
// nothing is written and no upstream called. What the request asks
// (tools, images, roles, n) is the upstream's to judge: see
// TestPassThroughUnknownParameter and TestTranslatedRefusals.
func TestBadRequests(t *testing.T) {
	const deepHead = `{"model":"m","messages":`
	up := newUpstream(t)
	_, ps := serverConfig(t, up)
	st := openStore(t, t.TempDir())
	srv := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})
	cases := []struct {
		name, body string
		hdr        map[string]string
		status     int
		want       string // in the error message
	}{
		{"not json", `{"model":`, nil, 400, "not valid JSON"},
		{"two values", `{"model":"m"} {}`, nil, 400, "more than one JSON value"},
		{"not an object", `[1]`, nil, 400, "must be a JSON object, not array"},
		{"bad replay header", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, map[string]string{proxy.HeaderReplay: "maybe"}, 400, "not a boolean"},
		{"too large", `{"model":"` + strings.Repeat("m", proxy.MaxBody) + `"}`, nil, 413, "larger than"},
		// The bracket 129 deep, inside the object.
		{"nested too deep", deepHead + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "}", nil, 413,
			fmt.Sprintf("request body: byte %d: arrays and objects nested deeper than %d", len(deepHead)+proxy.MaxDepth-1, proxy.MaxDepth)},
	}
	for _, route := range []string{proxy.RouteChatCompletions, proxy.RouteResponses, proxy.RouteEmbeddings, proxy.RouteMessages} {
		for _, c := range cases {
			t.Run(route+"/"+c.name, func(t *testing.T) {
				resp, b := post(t, srv.URL+route, c.body, c.hdr)
				if resp.StatusCode != c.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
				}
				var msg string
				if route == proxy.RouteMessages {
					msg = anthropicError(t, b)
				} else {
					msg = openAIError(t, b)
				}
				if !strings.Contains(msg, c.want) {
					t.Errorf("message %q does not contain %q", msg, c.want)
				}
			})
		}
	}
	if n := countTasks(t, st); n != 0 || up.calls.Load() != 0 {
		t.Errorf("%d tasks written and %d upstream calls made for bad requests, want none", n, up.calls.Load())
	}
}

// TestTranslatedRefusals: a block that is not an HTTP upstream (the
// offline script provider) is served translated, which carries messages,
// model, temperature, max tokens, stop and JSON mode: anything else is a
// 400 naming it and the block, never dropped; /v1/responses and
// /v1/embeddings have no translated form. What it carries it answers.
func TestTranslatedRefusals(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.toml"), []byte("[default]\nreply = \"scripted answer\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "serve.toml")
	if err := os.WriteFile(path, []byte("[providers.default]\nuse = \"script\"\nrules = \"rules.toml\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := registry(t)
	srvCfg, err := pipeline.LoadServer(context.Background(), path, reg, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps := openProvs(t, srvCfg, reg)
	if len(ps.ups) != 0 {
		t.Fatalf("upstreams %v: a script block is not an HTTP upstream", ps.ups)
	}
	st := openStore(t, t.TempDir())
	srv := serve(t, ps.live(st))
	cases := []struct {
		name, path, body string
		status           int
		want             string // in the error message
	}{
		{"no model", proxy.RouteChatCompletions, `{"messages":[{"role":"user","content":"x"}]}`, 400, "model"},
		{"no messages", proxy.RouteChatCompletions, `{"model":"m","messages":[]}`, 400, "messages"},
		{"tools", proxy.RouteChatCompletions, `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[]}`, 400, `unsupported parameter tools: the recording proxy carries messages, model, temperature, max_tokens, stop and response_format only (provider block "default" uses "script"`},
		{"image part", proxy.RouteChatCompletions, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, 400, `part type "image_url"`},
		{"tool role", proxy.RouteChatCompletions, `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, 400, `role "tool"`},
		{"n=2", proxy.RouteChatCompletions, `{"model":"m","n":2,"messages":[{"role":"user","content":"x"}]}`, 400, "one choice"},
		{"json schema", proxy.RouteChatCompletions, `{"model":"m","response_format":{"type":"json_schema"},"messages":[{"role":"user","content":"x"}]}`, 400, `response_format "json_schema"`},
		{"wrong type", proxy.RouteChatCompletions, `{"model":"m","temperature":"hot","messages":[{"role":"user","content":"x"}]}`, 400, "temperature: want a number, got string"},
		{"anthropic no max_tokens", proxy.RouteMessages, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, 400, "max_tokens"},
		{"anthropic system role", proxy.RouteMessages, `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, 400, "want user or assistant"},
		{"anthropic tools", proxy.RouteMessages, `{"model":"m","max_tokens":5,"tools":[],"messages":[{"role":"user","content":"x"}]}`, 400, "tools: unsupported parameter"},
		{"responses", proxy.RouteResponses, `{"model":"m","input":"x"}`, 400, `provider block "default" is not an HTTP upstream of the openai API`},
		{"embeddings", proxy.RouteEmbeddings, `{"model":"m","input":"x"}`, 400, `provider block "default" is not an HTTP upstream`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, b := post(t, srv.URL+c.path, c.body, nil)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			var msg string
			if c.path == proxy.RouteMessages {
				msg = anthropicError(t, b)
			} else {
				msg = openAIError(t, b)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("message %q does not contain %q", msg, c.want)
			}
		})
	}
	if n := countTasks(t, st); n != 0 {
		t.Errorf("%d tasks written for refused requests, want none", n)
	}
	resp, b := post(t, srv.URL+proxy.RouteChatCompletions, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "scripted answer") {
		t.Fatalf("translated call: %d %s", resp.StatusCode, b)
	}
}

func openAIError(t *testing.T, b []byte) string {
	t.Helper()
	var e struct {
		Error *struct{ Message, Type, Code string } `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil || e.Error.Type == "" || e.Error.Code == "" {
		t.Fatalf("not an OpenAI error: %s", b)
	}
	return e.Error.Message
}

func anthropicError(t *testing.T, b []byte) string {
	t.Helper()
	var e struct {
		Type  string
		Error *struct{ Type, Message string }
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Type != "error" || e.Error == nil || e.Error.Type == "" {
		t.Fatalf("not an Anthropic error: %s", b)
	}
	return e.Error.Message
}

// TestUpstreamFailure: an upstream 500 (no retries configured) reaches
// the client as the upstream said it (status and body), and is recorded
// as a failed execution whose span has error.type 500 and no recording.
func TestUpstreamFailure(t *testing.T) {
	up := newUpstream(t)
	up.fail.Store(500)
	_, ps := serverConfig(t, up)
	st := openStore(t, t.TempDir())
	srv := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})
	resp, b := post(t, srv.URL+"/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`, nil)
	if resp.StatusCode != 500 || string(b) != `{"error":{"message":"upstream says no","type":"server_error"}}` {
		t.Fatalf("status %d %s, want the upstream's 500 as it was", resp.StatusCode, b)
	}
	task := resp.Header.Get(proxy.HeaderTask)
	tr, err := st.Tree(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Task.Status != store.StatusFailed || len(tr.Recordings) != 0 {
		t.Fatalf("task %+v with %d recordings, want failed with none", tr.Task, len(tr.Recordings))
	}
	sp := tr.Executions[0].Spans[0]
	if sp.Status.Code != store.CodeError || sp.Attributes["error.type"].Str() != "500" || sp.Attributes[store.AttrGenAIProviderName].Str() != "openai" {
		t.Errorf("span %+v, want an error span with error.type 500 and provider openai", sp)
	}
}

// TestServerConfigErrors: serve.toml problems are reported at once with
// file:line, as a pipeline's are — a base_url an HTTP provider cannot
// call too, not every call a 502.
func TestServerConfigErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.toml")
	cfg := `[proxy]
replay = "yes"
name = ""

[providers.default]
use = "openai"
fallback = ["backup"]

[providers.other]
use = "opena"
api_key = "sk-123"

[providers.anthropic]
use = "anthropic"
base_url = "ftp://api.example.com"
`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := pipeline.LoadServer(context.Background(), path, registry(t), pipeline.Options{})
	if !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("err = %v, want invalid", err)
	}
	for _, want := range []string{
		path + `:2: proxy.replay:`,
		path + `:3: proxy.name: "" is empty`,
		path + `:7: providers.default.fallback[0]: unknown provider "backup"`,
		path + `:10: providers.other.use: unknown provider "opena" (did you mean "openai"?)`,
		path + `:11: providers.other.api_key: API keys never live in files`,
		path + `:15: providers.anthropic.base_url: "ftp://api.example.com" is not an http or https URL`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestOpen: the serve command's entry point. Live, an unset api_key_env
// is an error naming it; in replay (--replay or [proxy] replay) it is
// not, since upstream is never called.
func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.toml")
	cfg := "[providers.default]\nuse = \"openai\"\napi_key_env = \"PROXY_OPEN_UNSET_KEY\"\n"
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	st := openStore(t, t.TempDir())
	_, _, err := proxy.Open(context.Background(), proxy.OpenOptions{Config: path, Registry: registry(t), Store: st, Logger: quiet()})
	if err == nil || !strings.Contains(err.Error(), "providers.default.api_key_env: environment variable PROXY_OPEN_UNSET_KEY is not set") {
		t.Fatalf("live open: err = %v, want the unset variable named", err)
	}
	px, closeFn, err := proxy.Open(context.Background(), proxy.OpenOptions{Config: path, Registry: registry(t), Store: st, Replay: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn(context.Background())
	srv := httptest.NewServer(px)
	defer srv.Close()
	resp, b := post(t, srv.URL+proxy.RouteChatCompletions, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil)
	if resp.StatusCode != 404 || !strings.Contains(openAIError(t, b), "no recording") {
		t.Errorf("replay miss: %d %s", resp.StatusCode, b)
	}
}

// TestOpenRecordReplays: [proxy] record_replays in serve.toml keeps
// replayed calls (here a miss, as a failed replay execution); without it
// a replaying proxy stores nothing.
func TestOpenRecordReplays(t *testing.T) {
	for _, keep := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "serve.toml")
		cfg := fmt.Sprintf("[proxy]\nreplay = true\nrecord_replays = %v\n\n[providers.default]\nuse = \"openai\"\n", keep)
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		st := openStore(t, t.TempDir())
		px, closeFn, err := proxy.Open(context.Background(), proxy.OpenOptions{Config: path, Registry: registry(t), Store: st, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(px)
		resp, b := post(t, srv.URL+proxy.RouteChatCompletions, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil)
		srv.Close()
		closeFn(context.Background())
		if resp.StatusCode != 404 {
			t.Fatalf("record_replays = %v: %d %s, want a miss", keep, resp.StatusCode, b)
		}
		want := 0
		if keep {
			want = 1
		}
		if n := countTasks(t, st); n != want {
			t.Errorf("record_replays = %v: %d tasks stored, want %d", keep, n, want)
		}
	}
}

// TestUnavailableRetryAfter: a translated call whose upstream is
// unavailable is a 503 with a Retry-After, and so is one the provider's
// open circuit refuses — the time until the breaker's next probe — so a
// client's SDK knows when to send it again.
func TestUnavailableRetryAfter(t *testing.T) {
	up := newUpstream(t)
	up.fail.Store(http.StatusServiceUnavailable)
	_, ps := serverConfig(t, up)
	srv := serve(t, ps.live(openStore(t, t.TempDir())))
	body := `{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`
	for i := 0; ; i++ {
		resp, b := post(t, srv.URL+"/v1/messages", body, nil)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("call %d: status %d %s, want 503", i, resp.StatusCode, b)
		}
		ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 30 {
			t.Fatalf("call %d: Retry-After %q on %s, want 1 to 30 seconds", i, resp.Header.Get("Retry-After"), b)
		}
		if msg := anthropicError(t, b); strings.Contains(msg, "circuit open") {
			if n := up.calls.Load(); n != int64(i) {
				t.Fatalf("the circuit opened after %d calls reached the upstream, want %d", n, i)
			}
			return
		}
		if i > 10 {
			t.Fatal("the circuit never opened")
		}
	}
}

// serveWatched is serve whose read reports whether the proxy read any
// of the body of a request marked X-Watch.
func serveWatched(t *testing.T, cfg proxy.Config) (*httptest.Server, *atomic.Bool) {
	t.Helper()
	cfg.Logger = quiet()
	px, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	read := &atomic.Bool{}
	mux := http.NewServeMux()
	for path, h := range px.Handlers() {
		mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Watch") == "" {
				h.ServeHTTP(w, r)
				return
			}
			body := r.Body
			r.Body = watchedBody{body, read}
			h.ServeHTTP(w, r)
			// A body refused unread is read here, after its answer went
			// out: its client, still sending it, never has the
			// connection reset under it before it reads the answer.
			w.(http.Flusher).Flush()
			_, _ = io.Copy(io.Discard, body)
		}))
	}
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s, read
}

// watchedBody is a request body that notes it was read.
type watchedBody struct {
	io.ReadCloser
	read *atomic.Bool
}

func (b watchedBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.ReadCloser.Read(p)
}

// TestDecodeBudget: while calls hold what the proxy may hold decoded, one
// more whose body would take it past the budget — a few MB of small
// numbers decode to some eighty bytes each — is refused at once with a
// 503 and Retry-After in the API's error shape, and small calls go on; a
// call larger than the whole budget is served when it is the only one. A
// body whose Content-Length alone is past what is left is refused before
// a byte of it is read, and one over proxy.MaxBody is a 413 unread.
func TestDecodeBudget(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	up := newToolUpstream(t)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(`"hold"`)) {
			close(held)
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}`)
	})
	cfg := toolProviders(t, up).live(openStore(t, t.TempDir()))
	cfg.DecodeBudget = 1 << 20
	srv, read := serveWatched(t, cfg)
	small := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`
	large := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}],"logit_bias":[` + strings.Repeat("0,", 50_000) + `0]}`
	done := make(chan int)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+proxy.RouteChatCompletions, strings.NewReader(strings.Replace(small, `"x"`, `"hold"`, 1)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-held
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // a failure below leaves no call held
	resp, b := post(t, srv.URL+proxy.RouteChatCompletions, large, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(openAIError(t, b), "large requests") {
		t.Errorf("a large call while another is held: %d Retry-After %q %s, want 503 with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if resp, b := post(t, srv.URL+proxy.RouteChatCompletions, small, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a small call while another is held: %d %s, want 200", resp.StatusCode, b)
	}
	for _, c := range []struct {
		n    int
		want int
	}{{(1 << 20) + 1, http.StatusServiceUnavailable}, {proxy.MaxBody + 1, http.StatusRequestEntityTooLarge}} {
		body := `{"model":"gpt-4o-mini","pad":"` + strings.Repeat("x", c.n-len(`{"model":"gpt-4o-mini","pad":""}`)) + `"}`
		resp, b := post(t, srv.URL+proxy.RouteChatCompletions, body, map[string]string{"X-Watch": "1"})
		if resp.StatusCode != c.want {
			t.Errorf("a body of %d bytes while another is held: %d %.200s, want %d", c.n, resp.StatusCode, b, c.want)
		}
		if read.Load() {
			t.Errorf("a body of %d bytes refused (%d) after the proxy read it: want it refused unread", c.n, resp.StatusCode)
		}
	}
	free()
	if code := <-done; code != http.StatusOK {
		t.Errorf("the held call: %d", code)
	}
	if resp, b := post(t, srv.URL+proxy.RouteChatCompletions, large, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the large call alone: %d %s, want 200", resp.StatusCode, b)
	}
}

// TestContentEncoding: a body sent compressed (Content-Encoding: gzip) —
// here a small one that unpacks to 64 MiB — is refused unread with a 415
// naming the encoding, in the route's API error shape, not decoded and
// not taken for JSON that does not parse.
func TestContentEncoding(t *testing.T) {
	srv, read := serveWatched(t, proxy.Config{Store: openStore(t, t.TempDir()), Replay: true})
	var z bytes.Buffer
	gz := gzip.NewWriter(&z)
	_, _ = gz.Write([]byte(`{"model":"gpt-4o-mini","pad":"`))
	_, _ = gz.Write(bytes.Repeat([]byte("x"), 64<<20))
	_, _ = gz.Write([]byte(`"}`))
	gz.Close()
	for _, route := range []string{proxy.RouteChatCompletions, proxy.RouteMessages} {
		resp, b := post(t, srv.URL+route, z.String(), map[string]string{"Content-Encoding": "gzip", "X-Watch": "1"})
		if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(b), `content encoding \"gzip\"`) {
			t.Errorf("%s, a gzip body: %d %s, want a 415 naming the encoding", route, resp.StatusCode, b)
		}
	}
	if read.Load() {
		t.Error("the proxy read a body it refused for its encoding")
	}
}
