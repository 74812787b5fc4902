package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// passCase is one request to a pass-through route.
type passCase struct {
	name, route, body string
	hdr               map[string]string
}

// passCases carry what the old translated proxy refused: tools,
// tool_choice, images, JSON schemas, n, logprobs, reasoning options, and
// a parameter no API has ("frobnicate").
var passCases = []passCase{
	{name: "chat", route: proxy.RouteChatCompletions, body: `{"model":"gpt-4o-mini","frobnicate":7,"n":2,"logprobs":true,"top_logprobs":3,
 "response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"}}},"reasoning_effort":"low",
 "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
 "tool_choice":"auto","parallel_tool_calls":true,
 "messages":[{"role":"user","content":[{"type":"text","text":"Weather?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`},
	{name: "responses", route: proxy.RouteResponses, body: `{"model":"gpt-4o-mini","frobnicate":7,"instructions":"Use the tool.",
 "reasoning":{"effort":"low"},"text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object"}}},
 "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],
 "input":[{"role":"user","content":[{"type":"input_text","text":"Weather?"},{"type":"input_image","image_url":"https://example.invalid/a.png"}]}]}`},
	{name: "messages", route: proxy.RouteMessages, body: `{"model":"claude-test","max_tokens":64,"frobnicate":7,"thinking":{"type":"enabled","budget_tokens":1024},
 "tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"},
 "messages":[{"role":"user","content":[{"type":"text","text":"Weather?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`,
		hdr: map[string]string{"Anthropic-Version": "2023-06-01", "Anthropic-Beta": "tools-2024-04-04"}},
	{name: "embeddings", route: proxy.RouteEmbeddings, body: `{"model":"text-embedding-3-small","input":["a","b"],"dimensions":3,"frobnicate":7}`},
}

// streamed is body asking for a stream.
func streamed(body string) string {
	return strings.Replace(body, `{"model"`, `{"stream":true,"model"`, 1)
}

// TestPassThroughUnknownParameter: every route forwards the client's body
// byte for byte (a parameter sextant never heard of included) with the
// block's key as the upstream's auth header, hands the upstream's answer
// back byte for byte, whole or streamed, and replays it byte for byte with
// the upstream stopped.
func TestPassThroughUnknownParameter(t *testing.T) {
	up := newToolUpstream(t)
	ps := toolProviders(t, up)
	st := openStore(t, t.TempDir())
	live := serve(t, ps.live(st))
	type sent struct {
		c      passCase
		body   string
		answer []byte
		ct     string
	}
	var all []sent
	for _, c := range passCases {
		bodies := []string{c.body}
		if c.route != proxy.RouteEmbeddings {
			bodies = append(bodies, streamed(c.body))
		}
		for _, body := range bodies {
			before := len(up.calls())
			resp, b := post(t, live.URL+c.route, body, c.hdr)
			if resp.StatusCode != 200 || resp.Header.Get(proxy.HeaderRecorded) != "false" {
				t.Fatalf("%s: %d %s", c.name, resp.StatusCode, b)
			}
			calls := up.calls()[before:]
			if len(calls) != 1 {
				t.Fatalf("%s: %d upstream calls, want 1", c.name, len(calls))
			}
			if string(calls[0].body) != body {
				t.Errorf("%s: the upstream got\n%s\nwant the client's body as it was\n%s", c.name, calls[0].body, body)
			}
			if !bytes.Equal(b, calls[0].answer) {
				t.Errorf("%s: the client got\n%s\nwant the upstream's answer as it was\n%s", c.name, b, calls[0].answer)
			}
			if c.route == proxy.RouteMessages && (calls[0].key != toolKey || calls[0].auth != "") {
				t.Errorf("%s: the upstream got x-api-key %q, authorization %q; want the block's key as x-api-key only", c.name, calls[0].key, calls[0].auth)
			}
			all = append(all, sent{c, body, b, resp.Header.Get("Content-Type")})
		}
	}
	first := up.calls()[0]
	if first.auth != "Bearer "+toolKey {
		t.Errorf("the OpenAI upstream got authorization %q, want the block's key", first.auth)
	}
	up.Close()
	replay := serve(t, proxy.Config{Store: st, Replay: true})
	for _, s := range all {
		resp, b := post(t, replay.URL+s.c.route, s.body, s.c.hdr)
		if resp.StatusCode != 200 || resp.Header.Get(proxy.HeaderRecorded) != "true" {
			t.Fatalf("replay %s: %d %s", s.c.name, resp.StatusCode, b)
		}
		if !bytes.Equal(b, s.answer) || resp.Header.Get("Content-Type") != s.ct {
			t.Errorf("replay %s (%s): got\n%s\nwant the recorded bytes\n%s", s.c.name, resp.Header.Get("Content-Type"), b, s.answer)
		}
	}
}

// TestPassThroughModel: a block that sets model sends its own model, the
// rest of the body as the client wrote it; the span keeps the model the
// client asked for.
func TestPassThroughModel(t *testing.T) {
	up := newToolUpstream(t)
	ps := toolProviders(t, up, `model = "gpt-4.1-nano"`)
	st := openStore(t, t.TempDir())
	live := serve(t, ps.live(st))
	body := `{ "messages" : [{"role":"user","content":"Weather?"}],  "model" : "gpt-4o-mini", "frobnicate": 7 }`
	resp, b := post(t, live.URL+proxy.RouteChatCompletions, body, map[string]string{proxy.HeaderTask: "model-task"})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	want := `{ "messages" : [{"role":"user","content":"Weather?"}],  "model" : "gpt-4.1-nano", "frobnicate": 7 }`
	if got := string(up.calls()[0].body); got != want {
		t.Errorf("the upstream got %s, want %s", got, want)
	}
	tr, err := st.Tree(context.Background(), "model-task")
	if err != nil {
		t.Fatal(err)
	}
	a := tr.Executions[0].Spans[0].Attributes
	if a[store.AttrGenAIRequestModel].Str() != "gpt-4o-mini" || a[store.AttrGenAIResponseModel].Str() != "gpt-4.1-nano" {
		t.Errorf("span models %v / %v, want request gpt-4o-mini and response gpt-4.1-nano", a[store.AttrGenAIRequestModel], a[store.AttrGenAIResponseModel])
	}
}

// TestCanonicalForm: replay answers a request that differs from the
// recorded one only in what the canonical form ignores (key order,
// spacing, stream_options, user, metadata, store) and misses one that
// asks something else; a call recorded whole answers the same call
// streamed, and the reverse.
func TestCanonicalForm(t *testing.T) {
	up := newToolUpstream(t)
	ps := toolProviders(t, up)
	st := openStore(t, t.TempDir())
	live := serve(t, ps.live(st))
	record := func(route, body string) []byte {
		resp, b := post(t, live.URL+route, body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("record %s: %d %s", route, resp.StatusCode, b)
		}
		return b
	}
	chat := record(proxy.RouteChatCompletions, `{"model":"gpt-4o-mini","user":"alice","metadata":{"run":"1"},"store":true,"temperature":0.5,"messages":[{"role":"user","content":"Weather?"}]}`)
	msgStream := record(proxy.RouteMessages, `{"model":"claude-test","stream":true,"max_tokens":64,"metadata":{"user_id":"u1"},"messages":[{"role":"user","content":"Weather?"}]}`)
	up.Close()
	replay := serve(t, proxy.Config{Store: st, Replay: true})

	resp, b := post(t, replay.URL+proxy.RouteChatCompletions, `{ "messages": [ {"content":"Weather?", "role":"user"} ], "temperature":0.5, "user":"bob", "metadata":{"run":"2"}, "model":"gpt-4o-mini" }`, nil)
	if resp.StatusCode != 200 || !bytes.Equal(b, chat) {
		t.Errorf("reordered, other user and metadata: %d %s; want the recorded answer", resp.StatusCode, b)
	}
	resp, b = post(t, replay.URL+proxy.RouteChatCompletions, `{"model":"gpt-4o-mini","temperature":0.7,"messages":[{"role":"user","content":"Weather?"}]}`, nil)
	if resp.StatusCode != 404 || !strings.Contains(openAIError(t, b), "no recording answers this request") {
		t.Errorf("another temperature: %d %s; want a 404 miss", resp.StatusCode, b)
	}
	resp, b = post(t, replay.URL+proxy.RouteChatCompletions, `{"model":"gpt-4o-mini","temperature":0.5,"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"Weather?"}]}`, nil)
	if resp.StatusCode != 404 {
		t.Errorf("with tools: %d %s; want a 404 miss", resp.StatusCode, b)
	}

	// Whole, asked streamed: the events of the recorded answer.
	resp, b = post(t, replay.URL+proxy.RouteChatCompletions, `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"temperature":0.5,"messages":[{"role":"user","content":"Weather?"}]}`, nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("whole asked streamed: %d %s", resp.StatusCode, b)
	}
	var text strings.Builder
	var finish string
	var usage bool
	events := &sseEvents{sc: newScanner(b)}
	for {
		_, data, ok := events.next()
		if !ok {
			break
		}
		if data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
		usage = usage || c.Usage != nil && c.Usage.CompletionTokens == 12
	}
	var whole struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				ToolCalls []struct{ ID string } `json:"tool_calls"`
			}
		}
	}
	if err := json.Unmarshal(chat, &whole); err != nil {
		t.Fatal(err)
	}
	if finish != whole.Choices[0].FinishReason || !usage || !bytes.Contains(b, []byte(`"id":"call_weather_1"`)) || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
		t.Errorf("synthesized stream %s: want the recorded tool call, finish %q and usage", b, whole.Choices[0].FinishReason)
	}

	// Streamed, asked whole: the message its events assemble to.
	resp, b = post(t, replay.URL+proxy.RouteMessages, `{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"Weather?"}]}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("streamed asked whole: %d %s", resp.StatusCode, b)
	}
	var msg struct {
		ID         string
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string
			Input map[string]string
		}
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.ID != "msg_tools" || msg.StopReason != "tool_use" || len(msg.Content) != 1 || msg.Content[0].Input["city"] != "Paris" ||
		msg.Usage.InputTokens != 40 || msg.Usage.OutputTokens != 12 || !bytes.Contains(msgStream, []byte("input_json_delta")) {
		t.Errorf("assembled message %s, want the tool_use with its input from the input_json_delta events", b)
	}
}

// lockedBuffer is a log destination shared by the proxy's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestScrubKeys: an upstream that quotes the key it was sent — in an
// error, in an answer — never gets it to the client, the store or a log:
// on the pass-through routes and on the translated path alike.
func TestScrubKeys(t *testing.T) {
	up := newToolUpstream(t)
	path := toolConfig(t, up, "retries = 1")
	dir := t.TempDir()
	st := openStore(t, dir)
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	px, closeFn, err := proxy.Open(context.Background(), proxy.OpenOptions{Config: path, Registry: registry(t), Store: st, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn(context.Background())
	srv := httptest.NewServer(px)
	defer srv.Close()
	check := func(what string, b []byte) {
		t.Helper()
		if bytes.Contains(b, []byte(toolKey)) {
			t.Errorf("%s holds the key: %s", what, b)
		}
	}
	up.echoKey = "error"
	resp, b := post(t, srv.URL+proxy.RouteChatCompletions, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`, nil)
	if resp.StatusCode != 500 || !strings.Contains(openAIError(t, b), "Incorrect API key provided: [REDACTED].") {
		t.Errorf("echoed error: %d %s; want the upstream's 500 with the key scrubbed", resp.StatusCode, b)
	}
	check("the error the client got", b)
	// The translated path (an Anthropic client on an OpenAI block) with a
	// retry: the provider chain logs the upstream's error.
	resp, b = post(t, srv.URL+proxy.RouteMessages, `{"model":"default","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, nil)
	if resp.StatusCode < 400 {
		t.Errorf("translated echoed error: %d %s", resp.StatusCode, b)
	}
	check("the translated error the client got", b)
	up.echoKey = "ok"
	resp, b = post(t, srv.URL+proxy.RouteChatCompletions, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"y"}]}`, map[string]string{proxy.HeaderTask: "echo"})
	if resp.StatusCode != 200 || !strings.Contains(string(b), "your key is [REDACTED]") {
		t.Errorf("echoed answer: %d %s", resp.StatusCode, b)
	}
	check("the answer the client got", b)
	tasks, err := st.Tasks(context.Background(), store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 3 {
		t.Errorf("%d tasks, want 3 (two failed calls and an answer)", len(tasks))
	}
	for _, tk := range tasks {
		tr, err := st.Tree(context.Background(), tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(tr)
		check("task "+tk.ID, js)
		for _, h := range tr.Recordings {
			rec, err := st.Recording(context.Background(), h)
			if err != nil {
				t.Fatal(err)
			}
			js, _ := json.Marshal(rec)
			check("recording "+h, js)
		}
	}
	if !strings.Contains(logs.String(), "[REDACTED]") {
		t.Errorf("the log does not show the scrubbed upstream error, so this test proves nothing: %s", logs.String())
	}
	check("the log", []byte(logs.String()))
}

// TestBadUpstream: an upstream that answers garbage, cuts its stream
// short or never answers gets the client a clean error in its API's shape
// (an error event once the stream started), a failed execution and no
// recording — never a panic, a hang or a half answer replayed.
func TestBadUpstream(t *testing.T) {
	cases := []struct {
		mode, route, body string
		status            int
		want              string
	}{
		{"garbage", proxy.RouteChatCompletions, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`, 502, "not JSON"},
		{"garbage", proxy.RouteMessages, `{"model":"claude-test","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"x"}]}`, 502, "malformed stream event"},
		{"truncate", proxy.RouteChatCompletions, streamed(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`), 200, "cut short"},
		{"truncate", proxy.RouteResponses, streamed(`{"model":"gpt-4o-mini","input":"x"}`), 200, "cut short"},
		{"truncate", proxy.RouteMessages, `{"model":"claude-test","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"x"}]}`, 200, "cut short"},
		{"hang", proxy.RouteResponses, `{"model":"gpt-4o-mini","input":"x"}`, 504, "did not answer within its timeout"},
	}
	for _, c := range cases {
		t.Run(c.mode+c.route, func(t *testing.T) {
			up := newToolUpstream(t)
			up.mode = c.mode
			ps := toolProviders(t, up, `timeout = "200ms"`)
			st := openStore(t, t.TempDir())
			srv := serve(t, ps.live(st))
			resp, b := post(t, srv.URL+c.route, c.body, map[string]string{proxy.HeaderTask: "bad"})
			if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
				t.Fatalf("status %d %s; want %d saying %q", resp.StatusCode, b, c.status, c.want)
			}
			if c.status != 200 {
				if c.route == proxy.RouteMessages {
					anthropicError(t, b)
				} else {
					openAIError(t, b)
				}
			} else if !bytes.Contains(b, []byte("event: error")) && !bytes.Contains(b, []byte(`data: {"error":`)) {
				t.Errorf("a stream cut short ends without an error event: %s", b)
			}
			tr, err := st.Tree(context.Background(), "bad")
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Recordings) != 0 || len(tr.Executions) != 1 || tr.Executions[0].Execution.Status != store.StatusFailed {
				t.Errorf("%d recordings, executions %+v; want none and one failed", len(tr.Recordings), tr.Executions)
			}
		})
	}
}

// TestReplayStores: a replaying proxy stores nothing by default; with
// RecordReplays each replayed call is a replay execution of the task that
// recorded it.
func TestReplayStores(t *testing.T) {
	up := newToolUpstream(t)
	ps := toolProviders(t, up)
	st := openStore(t, t.TempDir())
	live := serve(t, ps.live(st))
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`
	resp, _ := post(t, live.URL+proxy.RouteChatCompletions, body, nil)
	task := resp.Header.Get(proxy.HeaderTask)
	up.Close()
	executions := func() int {
		tr, err := st.Tree(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		return len(tr.Executions)
	}
	quiet := serve(t, proxy.Config{Store: st, Replay: true})
	for range 3 {
		if r, b := post(t, quiet.URL+proxy.RouteChatCompletions, body, nil); r.StatusCode != 200 {
			t.Fatalf("replay: %d %s", r.StatusCode, b)
		}
	}
	post(t, quiet.URL+proxy.RouteChatCompletions, `{"model":"never"}`, nil)
	if n := countTasks(t, st); n != 1 || executions() != 1 {
		t.Fatalf("after replays: %d tasks, %d executions; want the recorded 1 and 1", n, executions())
	}
	kept := serve(t, proxy.Config{Store: st, Replay: true, RecordReplays: true})
	r, _ := post(t, kept.URL+proxy.RouteChatCompletions, body, nil)
	if r.Header.Get(proxy.HeaderTask) != task || executions() != 2 {
		t.Fatalf("a kept replay went to task %q with %d executions; want %s with 2", r.Header.Get(proxy.HeaderTask), executions(), task)
	}
	tr, _ := st.Tree(context.Background(), task)
	if ex := tr.Executions[1]; ex.Execution.Mode != "replay" || ex.Spans[0].Attributes["sextant.recorded"].Bool() != true {
		t.Errorf("kept replay %+v, want a replay execution marked recorded", ex.Execution)
	}
}

func newScanner(b []byte) *bufio.Scanner {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	return sc
}

// TestReplayRecordingReplaced: a replaying proxy answers with the
// recording as it is now, not as it was when it last replayed it: a
// recording replaced (a live call recorded it anew) answers the next
// replay with its new bytes.
func TestReplayRecordingReplaced(t *testing.T) {
	up := newUpstream(t)
	_, ps := serverConfig(t, up)
	st := openStore(t, t.TempDir())
	live := serve(t, ps.live(st))
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"what is 2+2?"}]}`
	resp, first := post(t, live.URL+proxy.RouteChatCompletions, body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("record: %d %s", resp.StatusCode, first)
	}
	hash := resp.Header.Get(proxy.HeaderHash)
	replay := serve(t, proxy.Config{Store: st, Replay: true})
	for range 2 {
		if r, b := post(t, replay.URL+proxy.RouteChatCompletions, body, nil); r.StatusCode != 200 || !bytes.Equal(b, first) {
			t.Fatalf("replay: %d %s, want the recorded %s", r.StatusCode, b, first)
		}
	}
	ctx := context.Background()
	rec, err := st.Recording(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	rec.Response = bytes.Replace(rec.Response, []byte("The answer is 4."), []byte("The answer is 5."), 1)
	if err := st.PutRecording(ctx, rec); err != nil {
		t.Fatal(err)
	}
	want := bytes.Replace(first, []byte("The answer is 4."), []byte("The answer is 5."), 1)
	if bytes.Equal(want, first) {
		t.Fatalf("the recorded answer %s does not say 4", first)
	}
	if r, b := post(t, replay.URL+proxy.RouteChatCompletions, body, nil); r.StatusCode != 200 || !bytes.Equal(b, want) {
		t.Fatalf("replay after the recording was replaced: %d %s, want %s", r.StatusCode, b, want)
	}
}

// TestRedirectElsewhereNotFollowed: an upstream that redirects a call to
// another origin (here another port of the same host, where net/http
// keeps even Authorization) is not followed: the server it names never
// sees the block's key (x-api-key or Authorization), and the client gets
// a 502 saying why. A redirect within the upstream's origin is followed.
func TestRedirectElsewhereNotFollowed(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	answer := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/messages") {
			fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`)
			return
		}
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}`)
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("X-Api-Key")+r.Header.Get("Authorization"))
		mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(other.Close)
	var elsewhere atomic.Bool
	elsewhere.Store(true)
	up := newToolUpstream(t)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/moved"):
			answer(w, r)
		case elsewhere.Load():
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
		default:
			http.Redirect(w, r, "/moved"+r.URL.Path, http.StatusPermanentRedirect)
		}
	})
	st := openStore(t, t.TempDir())
	live := serve(t, toolProviders(t, up).live(st))
	calls := map[string]string{
		proxy.RouteMessages:        `{"model":"claude-test","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`,
		proxy.RouteChatCompletions: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`,
	}
	for route, body := range calls {
		resp, b := post(t, live.URL+route, body, nil)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "another origin: not followed") {
			t.Errorf("%s redirected elsewhere: %d %s, want a 502 saying it was not followed", route, resp.StatusCode, b)
		}
	}
	mu.Lock()
	if len(seen) != 0 {
		t.Errorf("the origin the upstream redirected to was sent %q", seen)
	}
	mu.Unlock()
	elsewhere.Store(false)
	for route, body := range calls {
		if resp, b := post(t, live.URL+route, body, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s redirected within its origin: %d %s, want 200", route, resp.StatusCode, b)
		}
	}
}
