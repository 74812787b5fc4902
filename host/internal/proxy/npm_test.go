package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// npmClient returns the folder holding the official npm clients (openai,
// @openai/agents, @anthropic-ai/sdk: testdata/npm, installed from its
// lock file by .ci/run), installing them when they are missing. Without
// node the test is skipped, unless $CI is set: there it fails.
func npmClient(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed, and CI must run the npm clients (.ci/run installs nodejs)")
		}
		t.Skip("node is not installed: the official npm clients cannot run here")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "npm"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"openai", "@openai/agents", "@anthropic-ai/sdk"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			t.Logf("installing the npm clients (npm ci in %s)", dir)
			cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("npm ci: %v\n%s", err, out)
			}
			break
		}
	}
	return dir
}

func runNode(t *testing.T, dir, baseURL, mode string) []byte {
	t.Helper()
	return runScript(t, dir, "client.mjs", baseURL, mode)
}

// runScript runs node SCRIPT ARGS… in dir and returns what it printed.
func runScript(t *testing.T, dir, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s %v: %v\n%s", script, args, err, stderr.String())
	}
	return out
}

type npmCall struct {
	ID       string         `json:"id"`
	Created  int64          `json:"created"`
	Model    string         `json:"model"`
	Text     string         `json:"text"`
	Finish   string         `json:"finish"`
	Usage    map[string]int `json:"usage"`
	Streamed bool           `json:"streamed"`
}

// TestOpenAINpmClient drives the proxy with the official openai npm
// client: three calls (one streamed) are recorded as one task with spans
// and recordings; with the upstream stopped, the same calls in replay mode
// (storing replays) get identical answers; an unrecorded call gets
// OpenAI's error shape.
func TestOpenAINpmClient(t *testing.T) {
	dir := npmClient(t)
	up := newUpstream(t)
	_, ps := serverConfig(t, up)
	storeDir := t.TempDir()
	st := openStore(t, storeDir)

	// Record.
	live := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets, Name: "agent"})
	var recorded []npmCall
	if err := json.Unmarshal(runNode(t, dir, live.URL+"/v1", "calls"), &recorded); err != nil {
		t.Fatal(err)
	}
	if len(recorded) != 3 || up.calls.Load() != 3 {
		t.Fatalf("recorded %d answers with %d upstream calls, want 3 and 3: %+v", len(recorded), up.calls.Load(), recorded)
	}
	if want := "You asked: What is 2+2? The answer is 4."; recorded[0].Text != want {
		t.Errorf("first answer %q, want %q", recorded[0].Text, want)
	}
	if want := "You asked: Tell me a short story. The answer is 4."; recorded[2].Text != want || !recorded[2].Streamed || recorded[2].Finish != "stop" {
		t.Errorf("streamed answer %+v, want text %q streamed in chunks with finish stop", recorded[2], want)
	}
	if recorded[2].Usage["completion_tokens"] != 7 {
		t.Errorf("streamed usage %v, want completion_tokens 7 (stream_options.include_usage)", recorded[2].Usage)
	}

	// The three calls are one task, with an execution, a span and a
	// recording each.
	tr, err := st.Tree(context.Background(), "npm-suite")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Task.Pipeline != "agent" || len(tr.Executions) != 3 || len(tr.Recordings) != 3 {
		t.Fatalf("task %+v: %d executions, %d recordings; want pipeline agent, 3 and 3", tr.Task, len(tr.Executions), len(tr.Recordings))
	}
	for i, ex := range tr.Executions {
		if ex.Execution.Mode != "live" || ex.Execution.Status != store.StatusCompleted || len(ex.Spans) != 1 {
			t.Fatalf("execution %d: %+v with %d spans", i, ex.Execution, len(ex.Spans))
		}
		a := ex.Spans[0].Attributes
		if got := a[store.AttrGenAIProviderName].Str(); got != "openai" {
			t.Errorf("execution %d: gen_ai.provider.name %q, want openai", i, got)
		}
		if got := a[store.AttrGenAIUsageOutputTokens].Int(); got != 7 {
			t.Errorf("execution %d: output tokens %d, want 7", i, got)
		}
		if a["sextant.cost_usd"].Float() <= 0 {
			t.Errorf("execution %d: cost %v, want > 0 (priced by [prices.gpt-4o-mini] via the snapshot name)", i, a["sextant.cost_usd"])
		}
	}
	for _, h := range tr.Recordings {
		if _, err := st.Recording(context.Background(), h); err != nil {
			t.Errorf("recording %s: %v", h, err)
		}
	}

	// Replay with the upstream stopped: identical answers.
	up.Close()
	replay := serve(t, proxy.Config{Store: st, Replay: true, RecordReplays: true, Name: "agent"})
	var replayed []npmCall
	if err := json.Unmarshal(runNode(t, dir, replay.URL+"/v1", "calls"), &replayed); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(replayed, recorded) {
		t.Errorf("replayed answers differ from recorded ones:\n got %+v\nwant %+v", replayed, recorded)
	}
	if up.calls.Load() != 3 {
		t.Errorf("upstream called %d times, want 3 (replay never calls upstream)", up.calls.Load())
	}

	// An unrecorded call: OpenAI's error shape, a 4xx.
	var miss struct {
		Status  int    `json:"status"`
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Name    string `json:"name"`
	}
	if err := json.Unmarshal(runNode(t, dir, replay.URL+"/v1", "miss"), &miss); err != nil {
		t.Fatal(err)
	}
	if miss.Status != 404 || miss.Type != "invalid_request_error" || miss.Code != "recording_not_found" || miss.Name != "NotFoundError" {
		t.Errorf("miss = %+v, want a NotFoundError with status 404, type invalid_request_error, code recording_not_found", miss)
	}
	tr, err = st.Tree(context.Background(), "npm-suite")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tr.Executions); n != 7 {
		t.Fatalf("task has %d executions, want 7 (3 recorded, 3 replayed, 1 missed)", n)
	}
	last := tr.Executions[6]
	if last.Execution.Mode != "replay" || last.Execution.Status != store.StatusFailed ||
		last.Spans[0].Attributes["error.type"].Str() != "sextant.replay_miss" {
		t.Errorf("missed call recorded as %+v, span %+v; want a failed replay execution with error.type sextant.replay_miss", last.Execution, last.Spans[0])
	}
}

// toolProviders is a server config whose openai and anthropic blocks are
// the tool upstream (an OpenAI block "default", an Anthropic block
// "anthropic", which /v1/messages selects by its name); extra lines go
// into both blocks.
func toolProviders(t testing.TB, up *toolUpstream, extra ...string) *provs {
	t.Helper()
	path := toolConfig(t, up, extra...)
	reg := registry(t)
	srv, err := pipeline.LoadServer(context.Background(), path, reg, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return openProvs(t, srv, reg)
}

// toolConfig writes toolProviders' serve.toml and returns its path.
func toolConfig(t testing.TB, up *toolUpstream, extra ...string) string {
	t.Helper()
	t.Setenv("PROXY_TOOL_KEY", toolKey)
	more := strings.Join(extra, "\n") + "\n"
	if !strings.Contains(more, "retries") {
		more += "retries = 0\n"
	}
	cfg := fmt.Sprintf("[providers.default]\nuse = \"openai\"\nbase_url = %q\napi_key_env = \"PROXY_TOOL_KEY\"\n%s\n"+
		"[providers.anthropic]\nuse = \"anthropic\"\nbase_url = %q\napi_key_env = \"PROXY_TOOL_KEY\"\n%s", up.URL+"/v1", more, up.URL, more)
	path := filepath.Join(t.TempDir(), "serve.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sdkRequest is what an SDK sent the proxy: the route, the headers that
// say how it wants its answer, and whether its body asked for a stream.
type sdkRequest struct {
	path, accept, encoding, helper string
	stream, includeUsage           bool
}

// sniffed is the proxy behind a handler keeping what each request asked
// for, so a test can say what the SDKs actually send.
type sniffed struct {
	mu   sync.Mutex
	reqs []sdkRequest
}

func (s *sniffed) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Stream        bool `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		_ = json.Unmarshal(body, &m)
		s.mu.Lock()
		s.reqs = append(s.reqs, sdkRequest{path: r.URL.Path, accept: r.Header.Get("Accept"), encoding: r.Header.Get("Accept-Encoding"),
			helper: r.Header.Get("X-Stainless-Helper-Method"), stream: m.Stream, includeUsage: m.StreamOptions.IncludeUsage})
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (s *sniffed) since(n int) []sdkRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs[n:])
}

func (s *sniffed) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// serveSniffed is serve with the requests kept.
func serveSniffed(t testing.TB, cfg proxy.Config) (*httptest.Server, *sniffed) {
	t.Helper()
	cfg.Logger = quiet()
	px, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for path, h := range px.Handlers() {
		mux.Handle(path, h)
	}
	sn := &sniffed{}
	s := httptest.NewServer(sn.wrap(mux))
	t.Cleanup(s.Close)
	return s, sn
}

// TestSDKToolLoops drives the proxy, mounted in a real HTTP server, with
// agents on the official npm SDKs, each a tool loop against an upstream
// that first calls get_weather and then answers with its result: the
// OpenAI Agents SDK over the Responses API and over chat completions,
// each run whole and streamed (run(…, { stream: true }), its events
// consumed as they come), a streamed loop on the openai client, and a
// loop on the Anthropic client, its first turn on the messages.stream()
// helper or both. Recorded, each gets its answer, runs its tool once,
// and its calls are spans holding the tool call asked for and the tool
// result given, streamed end to end when the SDK asked for a stream;
// replayed with the upstream stopped, each sees byte for byte what it
// saw. The Agents SDK's providerData parameter ("frobnicate": 7) reaches
// the upstream unchanged.
func TestSDKToolLoops(t *testing.T) {
	dir := npmClient(t)
	up := newToolUpstream(t)
	ps := toolProviders(t, up)
	st := openStore(t, t.TempDir())
	live, sniff := serveSniffed(t, ps.live(st))
	scripts := []struct {
		name, task, path string
		// streamed: which of the two calls the SDK asked to stream.
		streamed [2]bool
		args     []string
	}{
		{"agents-responses", "agents-responses", "/v1/responses", [2]bool{}, []string{"agents.mjs", live.URL + "/v1", "responses"}},
		{"agents-chat", "agents-chat_completions", "/v1/chat/completions", [2]bool{}, []string{"agents.mjs", live.URL + "/v1", "chat_completions"}},
		{"agents-responses-stream", "agents-responses-stream", "/v1/responses", [2]bool{true, true}, []string{"agents.mjs", live.URL + "/v1", "responses", "stream"}},
		{"agents-chat-stream", "agents-chat_completions-stream", "/v1/chat/completions", [2]bool{true, true}, []string{"agents.mjs", live.URL + "/v1", "chat_completions", "stream"}},
		{"openai-stream-tools", "openai-stream-tools", "/v1/chat/completions", [2]bool{true, true}, []string{"openai-stream-tools.mjs", live.URL + "/v1"}},
		{"anthropic-tools", "anthropic-tools", "/v1/messages", [2]bool{true, false}, []string{"anthropic-tools.mjs", live.URL}},
		{"anthropic-tools-stream", "anthropic-tools-stream", "/v1/messages", [2]bool{true, true}, []string{"anthropic-tools.mjs", live.URL, "stream"}},
	}
	seen := map[string][]byte{}
	for _, sc := range scripts {
		before, sent := len(up.calls()), sniff.len()
		out := runScript(t, dir, sc.args[0], sc.args[1:]...)
		seen[sc.name] = out
		t.Logf("%s saw %s", sc.name, out)
		checkSDKOutput(t, sc.name, out)
		reqs := sniff.since(sent)
		for _, r := range reqs {
			t.Logf("%s sent POST %s stream=%v include_usage=%v Accept=%q Accept-Encoding=%q X-Stainless-Helper-Method=%q",
				sc.name, r.path, r.stream, r.includeUsage, r.accept, r.encoding, r.helper)
		}
		calls := up.calls()[before:]
		if len(calls) != 2 || len(reqs) != 2 {
			t.Fatalf("%s: %d requests to the proxy, %d upstream calls; want 2 and 2 (the tool call, then the answer)", sc.name, len(reqs), len(calls))
		}
		for i, c := range calls {
			if c.path != sc.path || reqs[i].path != sc.path {
				t.Errorf("%s: the SDK called %s and the upstream was called on %s, want %s", sc.name, reqs[i].path, c.path, sc.path)
			}
			if reqs[i].stream != sc.streamed[i] {
				t.Errorf("%s: call %d asked stream=%v, want %v", sc.name, i, reqs[i].stream, sc.streamed[i])
			}
			if sse := bytes.HasPrefix(c.answer, []byte("data: ")) || bytes.HasPrefix(c.answer, []byte("event: ")); sse != sc.streamed[i] {
				t.Errorf("%s: call %d answered as an event stream: %v, want %v: %.200s", sc.name, i, sse, sc.streamed[i], c.answer)
			}
		}
		if strings.HasPrefix(sc.name, "agents") && !bytes.Contains(calls[0].body, []byte(`"frobnicate":7`)) {
			t.Errorf("%s: the upstream did not get frobnicate: %s", sc.name, calls[0].body)
		}
		tr, err := st.Tree(context.Background(), sc.task)
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		if len(tr.Executions) != 2 || len(tr.Recordings) != 2 {
			t.Fatalf("%s: %d executions, %d recordings; want 2 and 2", sc.name, len(tr.Executions), len(tr.Recordings))
		}
		first, second := tr.Executions[0].Spans[0].Attributes, tr.Executions[1].Spans[0].Attributes
		if got := first["sextant.proxy.tool_calls"].List(); len(got) != 1 || got[0] != "get_weather" {
			t.Errorf("%s: first call's tool calls %v, want [get_weather]", sc.name, got)
		}
		if out := first[store.AttrGenAIOutputMessages].Str(); !strings.Contains(out, `"type":"tool_call"`) || !strings.Contains(out, `"city":"Paris"`) {
			t.Errorf("%s: first call's output messages %s, want the tool call with its arguments", sc.name, out)
		}
		if in := second[store.AttrGenAIInputMessages].Str(); !strings.Contains(in, `"type":"tool_call_response"`) || !strings.Contains(in, "sunny and 21 degrees") {
			t.Errorf("%s: second call's input messages %s, want the tool result", sc.name, in)
		}
		if out := second[store.AttrGenAIOutputMessages].Str(); !strings.Contains(out, "The weather in Paris: sunny and 21 degrees.") {
			t.Errorf("%s: second call's output messages %s, want the answer", sc.name, out)
		}
		if first[store.AttrGenAIUsageInputTokens].Int() != 40 || second[store.AttrGenAIUsageOutputTokens].Int() != 12 {
			t.Errorf("%s: usage %v/%v, want 40 in and 12 out", sc.name, first[store.AttrGenAIUsageInputTokens], second[store.AttrGenAIUsageOutputTokens])
		}
		for i, a := range []store.Attributes{first, second} {
			if got := a["sextant.proxy.stream"].Bool(); got != sc.streamed[i] {
				t.Errorf("%s: call %d recorded stream=%v, want %v", sc.name, i, got, sc.streamed[i])
			}
		}
	}

	n := len(up.calls())
	up.Close()
	replay := serve(t, proxy.Config{Store: st, Replay: true})
	tasks := countTasks(t, st)
	for _, sc := range scripts {
		args := slices.Clone(sc.args)
		args[1] = strings.Replace(args[1], live.URL, replay.URL, 1)
		if out := runScript(t, dir, args[0], args[1:]...); !bytes.Equal(out, seen[sc.name]) {
			t.Errorf("%s replayed saw\n%s\nrecorded saw\n%s", sc.name, out, seen[sc.name])
		}
	}
	if len(up.calls()) != n {
		t.Errorf("the upstream was called in replay")
	}
	if got := countTasks(t, st); got != tasks {
		t.Errorf("replay stored %d tasks, want none (no --record-replays)", got-tasks)
	}
}

// sdkOutput is what the tool-loop scripts print, each in its own shape;
// the fields any of them prints.
type sdkOutput struct {
	// Final is the Agents SDK's final output.
	Final string `json:"final"`
	// Stream is what a streamed Agents SDK run's events showed.
	Stream *struct {
		Items     []string `json:"items"`
		Text      string   `json:"text"`
		RawEvents int      `json:"rawEvents"`
	} `json:"stream"`
	// Turns are the openai and Anthropic clients' two turns.
	Turns []struct {
		Text    string `json:"text"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"turns"`
	// Seen is what a streamed Anthropic turn's events showed.
	Seen []struct {
		Events    []string `json:"events"`
		Text      string   `json:"text"`
		InputJSON []string `json:"inputJson"`
	} `json:"seen"`
	// ToolCalls are the cities the tool ran for.
	ToolCalls []string `json:"toolCalls"`
}

// checkSDKOutput checks a tool-loop script's output: its tool ran once,
// for Paris, and its final answer quotes the tool's result — in the
// events it streamed too, when it streamed.
func checkSDKOutput(t *testing.T, name string, out []byte) {
	t.Helper()
	const answer = "The weather in Paris: sunny and 21 degrees."
	var o sdkOutput
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("%s: %v: %s", name, err, out)
	}
	if !slices.Equal(o.ToolCalls, []string{"Paris"}) {
		t.Errorf("%s: the tool ran for %q, want once for Paris", name, o.ToolCalls)
	}
	final := o.Final
	if len(o.Turns) == 2 {
		final = o.Turns[1].Text
		for _, c := range o.Turns[1].Content {
			final += c.Text
		}
	}
	if final != answer {
		t.Errorf("%s: final answer %q, want %q: %s", name, final, answer, out)
	}
	if s := o.Stream; s != nil {
		want := []string{"tool_called", "tool_output", "message_output_created"}
		if !slices.Equal(s.Items, want) || s.Text != answer || s.RawEvents == 0 {
			t.Errorf("%s: the streamed run showed items %q, text %q in %d raw events; want %q and %q", name, s.Items, s.Text, s.RawEvents, want, answer)
		}
	}
	if strings.HasSuffix(name, "-stream") && strings.HasPrefix(name, "agents") && o.Stream == nil {
		t.Errorf("%s: the run did not stream: %s", name, out)
	}
	if strings.HasPrefix(name, "anthropic") && strings.HasSuffix(name, "-stream") {
		if len(o.Seen) != 2 {
			t.Fatalf("%s: %d streamed turns, want 2: %s", name, len(o.Seen), out)
		}
		if got := strings.Join(o.Seen[0].InputJSON, ""); got != `{"city": "Paris"}` || !slices.Contains(o.Seen[0].Events, "message_stop") {
			t.Errorf("%s: the tool turn streamed input %q in events %q, want {\"city\": \"Paris\"} up to message_stop", name, got, o.Seen[0].Events)
		}
		if o.Seen[1].Text != answer || !slices.Contains(o.Seen[1].Events, "message_stop") {
			t.Errorf("%s: the answer turn streamed text %q in events %q, want %q up to message_stop", name, o.Seen[1].Text, o.Seen[1].Events, answer)
		}
	}
}

// TestSDKToolLoopsOtherMode records each SDK's tool loop in one mode and
// replays it, with the upstream stopped, in the other: an Agents SDK run
// recorded whole replays streamed (the answers' events synthesized from
// the whole answers) and one recorded streamed replays whole (the whole
// answers assembled from the events), on the Responses API and on chat
// completions; an Anthropic loop recorded with one streamed turn replays
// with both streamed, and the reverse. Each replay gets its answer and
// runs its tool once.
func TestSDKToolLoopsOtherMode(t *testing.T) {
	dir := npmClient(t)
	// recorded and replayed name the modes (checkSDKOutput's names),
	// record and replay their arguments after the base URL.
	loops := []struct {
		recorded, replayed, script string
		record, replay             []string
	}{
		{"agents-responses", "agents-responses-stream", "agents.mjs", []string{"responses"}, []string{"responses", "stream"}},
		{"agents-responses-stream", "agents-responses", "agents.mjs", []string{"responses", "stream"}, []string{"responses"}},
		{"agents-chat", "agents-chat-stream", "agents.mjs", []string{"chat_completions"}, []string{"chat_completions", "stream"}},
		{"agents-chat-stream", "agents-chat", "agents.mjs", []string{"chat_completions", "stream"}, []string{"chat_completions"}},
		{"anthropic-tools", "anthropic-tools-stream", "anthropic-tools.mjs", nil, []string{"stream"}},
		{"anthropic-tools-stream", "anthropic-tools", "anthropic-tools.mjs", []string{"stream"}, nil},
	}
	for _, l := range loops {
		t.Run(l.recorded, func(t *testing.T) {
			up := newToolUpstream(t)
			ps := toolProviders(t, up)
			st := openStore(t, t.TempDir())
			live := serve(t, ps.live(st))
			base := func(s *httptest.Server) string {
				if l.script == "agents.mjs" {
					return s.URL + "/v1"
				}
				return s.URL
			}
			checkSDKOutput(t, l.recorded, runScript(t, dir, l.script, append([]string{base(live)}, l.record...)...))
			if n := len(up.calls()); n != 2 {
				t.Fatalf("recorded with %d upstream calls, want 2", n)
			}
			up.Close()
			replay := serve(t, proxy.Config{Store: st, Replay: true})
			checkSDKOutput(t, l.replayed, runScript(t, dir, l.script, append([]string{base(replay)}, l.replay...)...))
			if n := len(up.calls()); n != 2 {
				t.Errorf("the upstream was called %d times in replay", n-2)
			}
		})
	}
}
