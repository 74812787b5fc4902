package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// npmClient returns the folder holding the official openai npm client
// (testdata/npm, installed from its lock file by .ci/run), installing it
// when it is missing. The test is skipped only where node is absent.
func npmClient(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the official openai npm client cannot run here")
	}
	_ = node
	dir, err := filepath.Abs(filepath.Join("testdata", "npm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Logf("installing the openai npm client (npm ci in %s)", dir)
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	return dir
}

func runNode(t *testing.T, dir, baseURL, mode string) []byte {
	t.Helper()
	cmd := exec.Command("node", "client.mjs", baseURL, mode)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs %s: %v\n%s", mode, err, stderr.String())
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
// get identical answers; an unrecorded call gets OpenAI's error shape.
func TestOpenAINpmClient(t *testing.T) {
	dir := npmClient(t)
	up := newUpstream(t)
	_, ps := serverConfig(t, up)
	storeDir := t.TempDir()
	st := openStore(t, storeDir)

	// Record.
	live := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Name: "agent"})
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
	replay := serve(t, proxy.Config{Store: st, Replay: true, Name: "agent"})
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
