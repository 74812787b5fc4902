package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
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

// TestSDKToolLoops drives the proxy, mounted in a real HTTP server, with
// four agents on the official npm SDKs, each a tool loop against an
// upstream that first calls get_weather and then answers with its
// result: the OpenAI Agents SDK over the Responses API and over chat
// completions, a streamed loop on the openai client, and a loop on the
// Anthropic client (its first turn streamed). Recorded, each gets its
// answer and its calls are spans holding the tool call asked for and the
// tool result given; replayed with the upstream stopped, each sees
// byte for byte what it saw. The Agents SDK's providerData parameter
// ("frobnicate": 7) reaches the upstream unchanged.
func TestSDKToolLoops(t *testing.T) {
	dir := npmClient(t)
	up := newToolUpstream(t)
	ps := toolProviders(t, up)
	st := openStore(t, t.TempDir())
	live := serve(t, ps.live(st))
	scripts := []struct {
		name, task, path string
		args             []string
	}{
		{"agents-responses", "agents-responses", "/v1/responses", []string{"agents.mjs", live.URL + "/v1", "responses"}},
		{"agents-chat", "agents-chat_completions", "/v1/chat/completions", []string{"agents.mjs", live.URL + "/v1", "chat_completions"}},
		{"openai-stream-tools", "openai-stream-tools", "/v1/chat/completions", []string{"openai-stream-tools.mjs", live.URL + "/v1"}},
		{"anthropic-tools", "anthropic-tools", "/v1/messages", []string{"anthropic-tools.mjs", live.URL}},
	}
	seen := map[string][]byte{}
	for _, sc := range scripts {
		before := len(up.calls())
		out := runScript(t, dir, sc.args[0], sc.args[1:]...)
		seen[sc.name] = out
		if !bytes.Contains(out, []byte("The weather in Paris: sunny and 21 degrees.")) {
			t.Errorf("%s: the agent's answer lacks the tool's result: %s", sc.name, out)
		}
		calls := up.calls()[before:]
		if len(calls) != 2 {
			t.Fatalf("%s: %d upstream calls, want 2 (the tool call, then the answer)", sc.name, len(calls))
		}
		for _, c := range calls {
			if c.path != sc.path {
				t.Errorf("%s: upstream called on %s, want %s", sc.name, c.path, sc.path)
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
		if first[store.AttrGenAIUsageInputTokens].Int() != 40 || second[store.AttrGenAIUsageOutputTokens].Int() != 12 {
			t.Errorf("%s: usage %v/%v, want 40 in and 12 out", sc.name, first[store.AttrGenAIUsageInputTokens], second[store.AttrGenAIUsageOutputTokens])
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
