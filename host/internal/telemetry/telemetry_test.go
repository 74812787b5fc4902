package telemetry_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sextant-dev/sextant/host/internal/otlp"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/telemetry"
	_ "github.com/sextant-dev/sextant/navigators/chain"
	_ "github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/sdk"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// upstream answers OpenAI chat completions, or a 400 once fail is set.
func upstream(t *testing.T, fail *atomic.Bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if fail.Load() {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":{"message":"no","type":"invalid_request_error"}}`)
			return
		}
		fmt.Fprint(w, `{"id":"chatcmpl-1","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"the answer"}}],"usage":{"prompt_tokens":11,"completion_tokens":3}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func pipelineDir(t *testing.T, baseURL string) string {
	dir := t.TempDir()
	files := map[string]string{
		"pipeline.toml": `name = "tele"
[routine]
navigator = "chain"
file = "chain.toml"
[strategy]
file = "strategy.toml"
[providers.main]
use = "openai"
model = "gpt-4o-mini"
base_url = "` + baseURL + `/v1"
api_key_env = "TELEMETRY_TEST_KEY"
retries = 0
[steps.ask]
kind = "llm"
provider = "main"
prompt = "hello {{ .input.topic }} key sk-abcdefghijklmnopqrstuvwx"
`,
		"chain.toml": `name = "tele"
inputs = ["topic"]
[[steps]]
id = "ask"
inputs = ["topic"]
outputs = ["answer"]
`,
		"strategy.toml": `[metadata]
name = "tele"
version = "1.0.0"
created_at = 2026-01-01T00:00:00Z
[parameters]
user_confirmation = 0.5
[evolution]
max_parameter_delta = 0.1
branch_type = "experimental"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "pipeline.toml")
}

// TestExportFromRun runs a pipeline whose provider is the openai plugin
// with live export into sextant's own OTLP receiver over real HTTP, and
// checks the GenAI attributes that arrive: the well-known provider name
// (not the block's), server address and port, output type, usage; a
// failed call's error.type; prompt and response content only when asked
// for, and redacted.
func TestExportFromRun(t *testing.T) {
	t.Setenv("TELEMETRY_TEST_KEY", "sk-upstream-key-000000")
	ctx := context.Background()
	var fail atomic.Bool
	up := upstream(t, &fail)
	path := pipelineDir(t, up.URL)

	// The receiver, with its own store.
	recvStore, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer recvStore.Close()
	h, err := otlp.NewHandler(otlp.Config{Store: recvStore, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	// Every span that arrives is checked for a key written twice (the
	// root span stores its task; the exporter must not add it again).
	var dupKeys sync.Map
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("export is not OTLP protobuf: %v", err)
		}
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					seen := map[string]bool{}
					for _, kv := range sp.GetAttributes() {
						if seen[kv.GetKey()] {
							dupKeys.Store(sp.GetName()+": "+kv.GetKey(), true)
						}
						seen[kv.GetKey()] = true
					}
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	defer recv.Close()
	defer dupKeys.Range(func(k, _ any) bool { t.Errorf("key written twice: %s", k); return true })

	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	prep, err := run.Prepare(ctx, path, plugin.NewRegistry(entries), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	st, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	runOnce := func(content bool, topic string) (*run.Result, map[string]store.Span) {
		t.Helper()
		exp, err := telemetry.New(ctx, telemetry.Config{Endpoint: recv.URL + otlp.Route, Service: "tele-test",
			Content: content, Recordings: st, Redactor: st.Redactor(), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		res, err := prep.Runner(run.Config{Store: st, Logger: quiet(), OnSpans: exp.Spans}).
			Start(ctx, run.Input{Input: map[string]any{"topic": topic}})
		if err != nil {
			t.Fatal(err)
		}
		if err := exp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		ex, err := st.Execution(ctx, res.Task, res.Execution)
		if err != nil {
			t.Fatal(err)
		}
		// The spans carry sextant.task and sextant.execution: the
		// receiver files them under the same task and execution.
		tree, err := recvStore.Tree(ctx, res.Task)
		if err != nil {
			t.Fatalf("exported trace not received: %v", err)
		}
		byName := map[string]store.Span{}
		for _, e := range tree.Executions {
			if e.Execution.ID != res.Execution || e.Execution.TraceID != ex.TraceID {
				t.Errorf("received execution %s (trace %s), want %s (trace %s)", e.Execution.ID, e.Execution.TraceID, res.Execution, ex.TraceID)
			}
			for _, sp := range e.Spans {
				if _, ok := sp.Attributes[store.AttrTask]; ok {
					t.Errorf("span %q keeps %s among its attributes", sp.Name, store.AttrTask)
				}
			}
			for _, sp := range e.Spans {
				byName[sp.Name] = sp
			}
		}
		return res, byName
	}

	_, spans := runOnce(false, "dogs")
	chat, ok := spans["chat gpt-4o-mini"]
	if !ok {
		t.Fatalf("no chat span among %v", spans)
	}
	want := map[string]any{
		store.AttrGenAIProviderName:      "openai",
		store.AttrSextantProvider:        "main",
		store.AttrServerAddress:          "127.0.0.1",
		store.AttrGenAIOutputType:        "text",
		store.AttrGenAIRequestModel:      "gpt-4o-mini",
		store.AttrGenAIUsageInputTokens:  int64(11),
		store.AttrGenAIUsageOutputTokens: int64(3),
		store.AttrGenAIResponseID:        "chatcmpl-1",
		"service.name":                   "tele-test",
	}
	for k, v := range want {
		if got := chat.Attributes[k].Any(); got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	if port := chat.Attributes[store.AttrServerPort].Int(); fmt.Sprint(port) != up.URL[strings.LastIndexByte(up.URL, ':')+1:] {
		t.Errorf("server.port %d, want the upstream's (%s)", port, up.URL)
	}
	if _, ok := chat.Attributes[store.AttrGenAIInputMessages]; ok {
		t.Errorf("prompt exported with content capture off")
	}
	if len(spans) < 2 {
		t.Errorf("spans %v: want the run's root and step spans too", spans)
	}

	// Content on: the prompt and answer, redacted.
	_, spans = runOnce(true, "cats")
	chat = spans["chat gpt-4o-mini"]
	in, out := chat.Attributes[store.AttrGenAIInputMessages].Str(), chat.Attributes[store.AttrGenAIOutputMessages].Str()
	if !strings.Contains(in, "hello cats") || !strings.Contains(out, "the answer") {
		t.Errorf("content: input %q, output %q", in, out)
	}
	if strings.Contains(in, "sk-abcdefghijklmnopqrstuvwx") {
		t.Errorf("exported prompt holds the secret: %s", in)
	}

	// A failed call: a span with error.type.
	fail.Store(true)
	res, spans := runOnce(false, "birds")
	if res.Status != store.StatusFailed {
		t.Fatalf("run %s, want failed", res.Status)
	}
	chat = spans["chat gpt-4o-mini"]
	if got := chat.Attributes[store.AttrErrorType].Str(); got != "bad_request" || chat.Status.Code != store.CodeError {
		t.Errorf("failed call: error.type %q, status %+v; want bad_request and error", got, chat.Status)
	}
	if got := chat.Attributes[store.AttrGenAIProviderName].Str(); got != "openai" {
		t.Errorf("failed call: gen_ai.provider.name %q, want openai", got)
	}
}

// TestStoredMessagesOptIn: a span that holds its messages (the recording
// proxy's do: tool calls and tool results) exports them only with content
// capture on, as the GenAI conventions make them opt-in.
func TestStoredMessagesOptIn(t *testing.T) {
	ctx := context.Background()
	recvStore, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer recvStore.Close()
	h, err := otlp.NewHandler(otlp.Config{Store: recvStore, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	recv := httptest.NewServer(h)
	defer recv.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, content := range []bool{false, true} {
		task := fmt.Sprintf("msgs-%v", content)
		exp, err := telemetry.New(ctx, telemetry.Config{Endpoint: recv.URL + otlp.Route, Service: "tele-test", Content: content, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		exp.Spans([]store.Span{{Task: task, Execution: "e1", TraceID: strings.Repeat("ab", 16), SpanID: strings.Repeat("cd", 8),
			Name: "chat m", Kind: store.SpanClient, Start: t0, End: t0.Add(time.Second), Attributes: store.Attributes{
				store.AttrGenAIInputMessages:  store.String(`[{"role":"tool","parts":[{"type":"tool_call_response","id":"c1","response":"sunny"}]}]`),
				store.AttrGenAIOutputMessages: store.String(`[{"role":"assistant","parts":[{"type":"text","content":"It is sunny."}]}]`),
				"sextant.task":                store.String(task)}}})
		if err := exp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		tree, err := recvStore.Tree(ctx, task)
		if err != nil {
			t.Fatalf("content %v: %v", content, err)
		}
		a := tree.Executions[0].Spans[0].Attributes
		_, in := a[store.AttrGenAIInputMessages]
		_, out := a[store.AttrGenAIOutputMessages]
		if in != content || out != content {
			t.Errorf("content capture %v: input messages exported %v, output %v", content, in, out)
		}
	}
}
