package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/otlp"
	sxstore "github.com/sextant-dev/sextant/host/internal/store"
)

// TestLiveOpenAI runs the email-triage pipeline against a local server that
// speaks the OpenAI Chat Completions API: the run records spans with the
// provider's token counts and their cost, the server receives the key from
// the environment, and the key is found nowhere afterwards — not in the
// store's files, the exports, the output or the logs.
func TestLiveOpenAI(t *testing.T) {
	const key = "sk-proj-LIVEKEY-5b1e0c9f2a7d4e3b8c6a"
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			Model          string `json:"model"`
			ResponseFormat struct {
				Type string `json:"type"`
			} `json:"response_format"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Model != "gpt-4o-mini" || req.ResponseFormat.Type != "json_object" {
			http.Error(w, `{"error":{"message":"unexpected request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"{\"action\":\"archive\",\"confidence\":0.95}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":40,"total_tokens":1240}}`)
	}))
	defer srv.Close()

	dir := t.TempDir()
	isolate(t)
	src := filepath.Join(repoRoot(t), "pipelines", "email-triage")
	for _, f := range []string{"email-triage.bpmn", "strategies/email-handler.toml", "inputs/newsletter.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	pipe, _ := os.ReadFile(filepath.Join(src, "pipeline.toml"))
	text := strings.Replace(string(pipe), "[providers.default]\nuse = \"script\"\nrules = \"responses.toml\"",
		"[providers.default]\nuse = \"openai\"\nmodel = \"gpt-4o-mini\"\nbase_url = \"${OPENAI_BASE_URL}\"\napi_key_env = \"OPENAI_API_KEY\"", 1)
	text = strings.Replace(text, "dataset = \"dataset.jsonl\"\n", "", 1)
	if text == string(pipe) {
		t.Fatal("could not swap the provider in pipeline.toml")
	}
	os.WriteFile(filepath.Join(dir, "pipeline.toml"), []byte(text), 0o644)
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	// Live telemetry into sextant's own OTLP receiver, by the standard
	// environment variable.
	recvStore, err := sxstore.Open(context.Background(), t.TempDir(), sxstore.NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer recvStore.Close()
	recvHandler, err := otlp.NewHandler(otlp.Config{Store: recvStore})
	if err != nil {
		t.Fatal(err)
	}
	recv := httptest.NewServer(recvHandler)
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)

	sextant := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append([]string{"--log-level", "debug"}, args...), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	store := filepath.Join(dir, ".sextant")
	out, errs, code := sextant("run", filepath.Join(dir, "pipeline.toml"), "--input", filepath.Join(dir, "inputs/newsletter.json"), "--id", "live-1", "--json")
	if code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
	}
	var res struct {
		Tokens  int     `json:"tokens"`
		CostUSD float64 `json:"cost_usd"`
	}
	json.Unmarshal([]byte(out), &res)
	// gpt-4o-mini: $0.15 in / $0.60 out per million tokens.
	if wantCost := (1200*0.15 + 40*0.60) / 1e6; res.Tokens != 1240 || res.CostUSD < wantCost*0.999 || res.CostUSD > wantCost*1.001 {
		t.Fatalf("tokens %d cost %v, want 1240 and %v", res.Tokens, res.CostUSD, wantCost)
	}
	if calls.Load() != 1 {
		t.Fatalf("server saw %d calls, want 1", calls.Load())
	}
	exported, err := recvStore.Tree(context.Background(), "live-1")
	if err != nil {
		t.Fatalf("the run's spans were not exported live: %v", err)
	}
	var llm *sxstore.Span
	for i, sp := range exported.Executions[0].Spans {
		if sp.Kind == sxstore.SpanClient {
			llm = &exported.Executions[0].Spans[i]
		}
	}
	if llm == nil || llm.Attributes[sxstore.AttrGenAIProviderName].Str() != "openai" || llm.Attributes[sxstore.AttrSextantProvider].Str() != "default" ||
		llm.Attributes[sxstore.AttrServerAddress].Str() != "127.0.0.1" || llm.Attributes[sxstore.AttrGenAIUsageInputTokens].Int() != 1200 {
		t.Errorf("exported LLM span %+v: want provider openai (block default), server 127.0.0.1, 1200 input tokens", llm)
	}
	show, _, _ := sextant("show", "live-1", "--store", store)
	if !strings.Contains(show, "in 1200  out 40  $0.0002") {
		t.Fatalf("show lacks the LLM span's tokens and cost:\n%s", show)
	}
	otlp, _, _ := sextant("export", "--format", "otlp", "--store", store)
	for _, attr := range []string{`"gen_ai.usage.input_tokens"`, `"gen_ai.request.model"`, `"gen_ai.provider.name"`} {
		if !strings.Contains(otlp, attr) {
			t.Errorf("OTLP export lacks %s", attr)
		}
	}
	jsonl, _, _ := sextant("export", "--checkpoints", "--store", store)
	for what, text := range map[string]string{"run output": out, "logs": errs, "show": show, "otlp export": otlp, "jsonl export": jsonl} {
		if strings.Contains(text, key) {
			t.Errorf("the API key appears in the %s", what)
		}
	}
	err = filepath.Walk(store, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("the API key is in store file %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
