package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// streamUpstream is an OpenAI- and Anthropic-compatible server on a real
// port that streams its answer as server-sent events: the first delta,
// then nothing until release is closed (or the request ends), then the
// rest. A proxy that assembled the answer before passing it on would
// never show its client the first delta.
type streamUpstream struct {
	*httptest.Server
	calls   atomic.Int64
	mode    string // ok | break | malformed | fail | hugeline
	release chan struct{}
	once    sync.Once
}

const (
	streamFirst = "Hello"
	streamRest  = " streamed world, one token at a time."
)

func newStreamUpstream(t *testing.T, mode string) *streamUpstream {
	u := &streamUpstream{mode: mode, release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(func() { u.open(); u.Close() })
	return u
}

// open lets the blocked answers go on.
func (u *streamUpstream) open() { u.once.Do(func() { close(u.release) }) }

func (u *streamUpstream) serve(w http.ResponseWriter, r *http.Request) {
	anthropic := r.URL.Path == "/v1/messages"
	if r.URL.Path != "/v1/chat/completions" && !anthropic {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer sk-upstream" && r.Header.Get("X-Api-Key") != "sk-upstream" {
		http.Error(w, `{"error":{"message":"bad key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
		return
	}
	u.calls.Add(1)
	var req struct {
		Stream        bool `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
		http.Error(w, "want a streamed request", http.StatusBadRequest)
		return
	}
	if !anthropic && (req.StreamOptions == nil || !req.StreamOptions.IncludeUsage) {
		http.Error(w, "want stream_options.include_usage", http.StatusBadRequest)
		return
	}
	if u.mode == "fail" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"upstream down","type":"server_error"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	send := func(event, data string) {
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		fmt.Fprintf(w, "data: %s\n\n", data)
		f.Flush()
	}
	switch u.mode {
	case "malformed":
		send("", `{"id":"x","choices":[{"delta":{"content":`)
		return
	case "hugeline":
		send("", `{"pad":"`+strings.Repeat("x", proxy.MaxEvent)+`"}`)
		return
	}
	delta := func(text string) {
		b, _ := json.Marshal(text)
		if anthropic {
			send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(b)+`}}`)
		} else {
			send("", `{"id":"chatcmpl-up","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":`+string(b)+`},"finish_reason":null}]}`)
		}
	}
	if anthropic {
		send("message_start", `{"type":"message_start","message":{"id":"msg_up","type":"message","role":"assistant","model":"claude-up-1","content":[],"usage":{"input_tokens":12,"output_tokens":1}}}`)
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		send("ping", `{"type":"ping"}`)
	} else {
		send("", `{"id":"chatcmpl-up","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	}
	delta(streamFirst)
	select {
	case <-u.release:
	case <-r.Context().Done():
		return
	}
	if u.mode == "break" {
		return // the connection ends without a finish: a stream cut short
	}
	for _, part := range strings.SplitAfter(streamRest, " ") {
		if part != "" {
			delta(part)
		}
	}
	if anthropic {
		send("content_block_stop", `{"type":"content_block_stop","index":0}`)
		send("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`)
		send("message_stop", `{"type":"message_stop"}`)
		return
	}
	send("", `{"id":"chatcmpl-up","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	send("", `{"id":"chatcmpl-up","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21}}`)
	send("", "[DONE]")
}

// streamProviders opens a server config's providers as `sextant serve
// --config` does.
func streamProviders(t *testing.T, cfg string) *provs {
	t.Helper()
	t.Setenv("PROXY_TEST_KEY", "sk-upstream")
	path := filepath.Join(t.TempDir(), "serve.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := registry(t)
	srv, err := pipeline.LoadServer(context.Background(), path, reg, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return openProvs(t, srv, reg)
}

func block(name, use, url string, fallback ...string) string {
	s := fmt.Sprintf("[providers.%s]\nuse = %q\nbase_url = %q\napi_key_env = \"PROXY_TEST_KEY\"\nretries = 0\n", name, use, url)
	if len(fallback) > 0 {
		b, _ := json.Marshal(fallback)
		s += "fallback = " + string(b) + "\n"
	}
	return s + "\n"
}

// sseEvents reads a proxy's streamed answer event by event.
type sseEvents struct{ sc *bufio.Scanner }

func (s *sseEvents) next() (event, data string, ok bool) {
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && data != "":
			return event, data, true
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	return event, data, data != ""
}

// api is one of the proxy's two routes as a streaming client sees it.
type api struct {
	name, route, use, body string
	// text returns the text an event adds; err is the error event's
	// message ("" for any other event).
	text func(t *testing.T, event, data string) (text, err string)
	// whole reads an unstreamed answer's text.
	whole func(t *testing.T, b []byte) string
}

var apis = []api{{
	name: "openai", route: proxy.RouteChatCompletions, use: "openai",
	body: `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Stream to me."}]}`,
	text: func(t *testing.T, _, data string) (string, string) {
		if data == "[DONE]" {
			return "", ""
		}
		var c struct {
			Choices []struct{ Delta struct{ Content string } }
			Error   *struct{ Message string }
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if c.Error != nil {
			return "", c.Error.Message
		}
		if len(c.Choices) == 0 {
			return "", ""
		}
		return c.Choices[0].Delta.Content, ""
	},
	whole: func(t *testing.T, b []byte) string {
		var c struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.Unmarshal(b, &c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("answer %s: %v", b, err)
		}
		return c.Choices[0].Message.Content
	},
}, {
	name: "anthropic", route: proxy.RouteMessages, use: "anthropic",
	body: `{"model":"claude-up","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Stream to me."}]}`,
	text: func(t *testing.T, event, data string) (string, string) {
		var e struct {
			Type  string
			Delta struct{ Type, Text string }
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %s %q: %v", event, data, err)
		}
		if e.Type != event {
			t.Fatalf("event %s holds type %q", event, e.Type)
		}
		switch e.Type {
		case "error":
			return "", e.Error.Message
		case "content_block_delta":
			return e.Delta.Text, ""
		}
		return "", ""
	},
	whole: func(t *testing.T, b []byte) string {
		var m struct{ Content []struct{ Text string } }
		if err := json.Unmarshal(b, &m); err != nil || len(m.Content) != 1 {
			t.Fatalf("answer %s: %v", b, err)
		}
		return m.Content[0].Text
	},
}}

// streamCall is a streamed call in progress.
type streamCall struct {
	resp   *http.Response
	events *sseEvents
}

func startStream(t *testing.T, url, body string, hdr map[string]string) *streamCall {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return &streamCall{resp: resp, events: &sseEvents{sc: bufio.NewScanner(resp.Body)}}
}

// firstDelta reads events up to the first text. The upstream holds the
// rest back until the test opens it, so a proxy that does not pass the
// stream through never gets here; the guard turns that hang into a
// failure.
func (c *streamCall) firstDelta(t *testing.T, a api) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		for {
			ev, data, ok := c.events.next()
			if !ok {
				got <- ""
				return
			}
			if text, _ := a.text(t, ev, data); text != "" {
				got <- text
				return
			}
		}
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(30 * time.Second):
		t.Fatal("no delta reached the client while the upstream held the rest back: the proxy is not passing the stream through")
		return ""
	}
}

// rest reads the remaining events: the text and any error event.
func (c *streamCall) rest(t *testing.T, a api) (text, errMsg string, events []string) {
	var b strings.Builder
	for {
		ev, data, ok := c.events.next()
		if !ok {
			return b.String(), errMsg, events
		}
		events = append(events, ev)
		s, e := a.text(t, ev, data)
		b.WriteString(s)
		if e != "" {
			errMsg = e
		}
	}
}

// TestStreamPassThrough: in record mode a streamed call reaches its
// client delta by delta while the upstream is still answering; the
// recording holds the assembled answer, and replay (streamed or not)
// gives the identical text without calling upstream.
func TestStreamPassThrough(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			up := newStreamUpstream(t, "ok")
			ps := streamProviders(t, block("default", a.use, up.URL+pathPrefix(a)))
			st := openStore(t, t.TempDir())
			srv := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})

			call := startStream(t, srv.URL+a.route, a.body, map[string]string{proxy.HeaderTask: "stream-task"})
			if got := call.firstDelta(t, a); got != streamFirst {
				t.Fatalf("first delta %q, want %q", got, streamFirst)
			}
			up.open()
			text, errMsg, _ := call.rest(t, a)
			if errMsg != "" {
				t.Fatalf("error event %q", errMsg)
			}
			want := streamFirst + streamRest
			if got := streamFirst + text; got != want {
				t.Fatalf("streamed text %q, want %q", got, want)
			}
			hash := call.resp.Header.Get(proxy.HeaderHash)
			if call.resp.Header.Get(proxy.HeaderRecorded) != "false" || hash == "" {
				t.Fatalf("headers %v: want a live call with its request hash", call.resp.Header)
			}

			// The recording holds the stream as it was sent, with its usage.
			rec, err := st.Recording(context.Background(), hash)
			if err != nil {
				t.Fatal(err)
			}
			var env struct {
				Status      int
				ContentType string `json:"content_type"`
				Stream      bool
				Body, Text  string
			}
			if err := json.Unmarshal(rec.Response, &env); err != nil {
				t.Fatal(err)
			}
			if env.Text != want || !env.Stream || env.Status != 200 || rec.Usage.OutputTokens != 9 || rec.Usage.InputTokens != 12 ||
				!strings.Contains(env.Body, `"Hello"`) {
				t.Fatalf("recorded %+v (usage %+v), want the stream of %q with usage 12/9", env, rec.Usage, want)
			}
			tr, err := st.Tree(context.Background(), "stream-task")
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Executions) != 1 || tr.Executions[0].Execution.Status != store.StatusCompleted {
				t.Fatalf("executions %+v, want one completed", tr.Executions)
			}
			if a := tr.Executions[0].Spans[0].Attributes; a[store.AttrGenAIUsageOutputTokens].Int() != 9 {
				t.Errorf("span output tokens %d, want 9", a[store.AttrGenAIUsageOutputTokens].Int())
			}

			// Replay, streamed and not: the same text, no upstream call.
			replay := serve(t, proxy.Config{Store: st, Replay: true})
			rc := startStream(t, replay.URL+a.route, a.body, nil)
			first := rc.firstDelta(t, a)
			rest, errMsg, _ := rc.rest(t, a)
			if first+rest != want || errMsg != "" || rc.resp.Header.Get(proxy.HeaderRecorded) != "true" {
				t.Errorf("replayed stream %q (error %q, recorded %s), want %q", first+rest, errMsg, rc.resp.Header.Get(proxy.HeaderRecorded), want)
			}
			r, b := post(t, replay.URL+a.route, unstreamed(t, a.body), nil)
			if r.StatusCode != 200 {
				t.Fatalf("replay status %d: %s", r.StatusCode, b)
			}
			if got := a.whole(t, b); got != want {
				t.Errorf("replayed answer %q, want %q", got, want)
			}
			if n := up.calls.Load(); n != 1 {
				t.Errorf("upstream called %d times, want 1", n)
			}
		})
	}
}

// unstreamed is body without stream and stream_options.
func unstreamed(t *testing.T, body string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "stream")
	delete(m, "stream_options")
	b, _ := json.Marshal(m)
	return string(b)
}

func pathPrefix(a api) string {
	if a.use == "openai" {
		return "/v1" // the openai plugin appends /chat/completions
	}
	return "" // the anthropic plugin appends /v1/messages
}

// TestStreamBrokenMidway: an upstream that fails after the first delta
// reached the client ends the client's stream with an error event in the
// API's shape; the fallback is not tried (the client has seen part of an
// answer), the execution is recorded failed and no recording is written,
// so a replay misses instead of answering half.
func TestStreamBrokenMidway(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			up := newStreamUpstream(t, "break")
			backup := newStreamUpstream(t, "ok")
			backup.open()
			ps := streamProviders(t, block("default", a.use, up.URL+pathPrefix(a), "backup")+block("backup", a.use, backup.URL+pathPrefix(a)))
			st := openStore(t, t.TempDir())
			srv := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})

			call := startStream(t, srv.URL+a.route, a.body, map[string]string{proxy.HeaderTask: "broken"})
			if got := call.firstDelta(t, a); got != streamFirst {
				t.Fatalf("first delta %q", got)
			}
			up.open()
			text, errMsg, events := call.rest(t, a)
			if text != "" || !strings.Contains(errMsg, "ended before its final event") || !strings.Contains(errMsg, "cut short") {
				t.Fatalf("after the break: text %q, error event %q (events %q); want an error event naming the cut", text, errMsg, events)
			}
			if a.use == "anthropic" && (len(events) != 1 || events[0] != "error") {
				t.Errorf("events after the break %q, want one error event", events)
			}
			if n := backup.calls.Load(); n != 0 {
				t.Errorf("backup called %d times, want 0 (no fallback after the first delta)", n)
			}
			tr, err := st.Tree(context.Background(), "broken")
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Executions) != 1 || len(tr.Recordings) != 0 {
				t.Fatalf("%d executions, %d recordings; want 1 and 0", len(tr.Executions), len(tr.Recordings))
			}
			ex := tr.Executions[0]
			if ex.Execution.Status != store.StatusFailed || !ex.Spans[0].Attributes["sextant.proxy.stream_broken"].Bool() {
				t.Errorf("execution %+v span %+v: want failed, marked stream_broken", ex.Execution, ex.Spans[0].Attributes)
			}
			replay := serve(t, proxy.Config{Store: st, Replay: true})
			if r, b := post(t, replay.URL+a.route, a.body, nil); r.StatusCode != http.StatusNotFound {
				t.Errorf("replay of a broken stream: status %d %s, want 404 (nothing recorded)", r.StatusCode, b)
			}
		})
	}
}

// TestStreamFallbackBeforeFirstDelta: a provider that fails before any
// delta was sent falls back, and the client streams the fallback's answer.
func TestStreamFallbackBeforeFirstDelta(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			up := newStreamUpstream(t, "fail")
			backup := newStreamUpstream(t, "ok")
			ps := streamProviders(t, block("default", a.use, up.URL+pathPrefix(a), "backup")+block("backup", a.use, backup.URL+pathPrefix(a)))
			st := openStore(t, t.TempDir())
			srv := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})
			call := startStream(t, srv.URL+a.route, a.body, map[string]string{proxy.HeaderTask: "fallback"})
			if got := call.firstDelta(t, a); got != streamFirst {
				t.Fatalf("first delta %q", got)
			}
			backup.open()
			text, errMsg, _ := call.rest(t, a)
			if streamFirst+text != streamFirst+streamRest || errMsg != "" {
				t.Fatalf("text %q error %q", streamFirst+text, errMsg)
			}
			if up.calls.Load() != 1 || backup.calls.Load() != 1 {
				t.Errorf("calls: primary %d, backup %d; want 1 and 1", up.calls.Load(), backup.calls.Load())
			}
			tr, err := st.Tree(context.Background(), "fallback")
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Recordings) != 1 || tr.Executions[0].Spans[0].Attributes["sextant.provider"].Str() != "backup" {
				t.Errorf("recordings %d, provider %v; want 1 recording answered by backup", len(tr.Recordings), tr.Executions[0].Spans[0].Attributes["sextant.provider"])
			}
		})
	}
}

// TestStreamMalformedUpstream: an upstream stream whose first event does
// not decode (a truncated event, an event over proxy.MaxEvent) is a 502 in
// the API's shape, never a panic or a half answer.
func TestStreamMalformedUpstream(t *testing.T) {
	for _, a := range apis {
		for _, mode := range []string{"malformed", "hugeline"} {
			t.Run(a.name+"/"+mode, func(t *testing.T) {
				up := newStreamUpstream(t, mode)
				ps := streamProviders(t, block("default", a.use, up.URL+pathPrefix(a)))
				st := openStore(t, t.TempDir())
				srv := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})
				r, b := post(t, srv.URL+a.route, a.body, map[string]string{proxy.HeaderTask: "bad"})
				if r.StatusCode != http.StatusBadGateway {
					t.Fatalf("status %d: %s; want 502", r.StatusCode, b)
				}
				msg := string(b)
				if !strings.Contains(msg, "malformed stream event") && !strings.Contains(msg, "event is over") {
					t.Errorf("error %s: want it to say what was wrong with the stream", b)
				}
				tr, err := st.Tree(context.Background(), "bad")
				if err != nil {
					t.Fatal(err)
				}
				if len(tr.Recordings) != 0 || tr.Executions[0].Execution.Status != store.StatusFailed {
					t.Errorf("recordings %d, execution %+v; want none and failed", len(tr.Recordings), tr.Executions[0].Execution)
				}
			})
		}
	}
}

// TestStreamClientHangsUp: a client that hangs up after the first delta
// cancels the upstream call; the call is recorded as a failed execution
// with no recording, never as a half answer.
func TestStreamClientHangsUp(t *testing.T) {
	a := apis[0]
	up := newStreamUpstream(t, "ok")
	ps := streamProviders(t, block("default", a.use, up.URL+pathPrefix(a)))
	st := openStore(t, t.TempDir())
	recorded := make(chan []store.Span, 1)
	srv := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets,
		OnSpans: func(s []store.Span) { recorded <- s }})
	call := startStream(t, srv.URL+a.route, a.body, map[string]string{proxy.HeaderTask: "gone"})
	if got := call.firstDelta(t, a); got != streamFirst {
		t.Fatalf("first delta %q", got)
	}
	call.resp.Body.Close() // the upstream is still holding the rest back
	spans := <-recorded
	if spans[0].Status.Code != store.CodeError || !spans[0].Attributes["sextant.proxy.stream_broken"].Bool() {
		t.Fatalf("span %+v: want an error marked stream_broken", spans[0])
	}
	tr, err := st.Tree(context.Background(), "gone")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Recordings) != 0 || tr.Executions[0].Execution.Status != store.StatusFailed {
		t.Errorf("recordings %d, execution %+v; want none and failed", len(tr.Recordings), tr.Executions[0].Execution)
	}
}
