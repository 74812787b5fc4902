package otlp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sextant-dev/sextant/host/internal/otlp"
	"github.com/sextant-dev/sextant/host/internal/store"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func receiver(t *testing.T) (*store.Store, *httptest.Server) { return receiverB(t) }

func receiverB(t testing.TB) (*store.Store, *httptest.Server) {
	t.Helper()
	st, err := store.Open(context.Background(), t.TempDir(), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := otlp.NewHandler(otlp.Config{Store: st, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(otlp.Route, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return st, srv
}

// TestGoSDKExport: spans exported by the OpenTelemetry Go SDK (the
// otlptracehttp exporter, protobuf over real HTTP) are stored as a task
// per trace, with GenAI usage priced.
func TestGoSDKExport(t *testing.T) {
	st, srv := receiver(t)
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+otlp.Route))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "py-agent"))))
	tr := tp.Tracer("agent")
	ctx, root := tr.Start(ctx, "invoke_agent triage")
	_, llm := tr.Start(ctx, "chat gpt-4o-mini", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.system", "openai"),
		attribute.String("gen_ai.request.model", "gpt-4o-mini"),
		attribute.Int("gen_ai.usage.input_tokens", 1000),
		attribute.Int("gen_ai.usage.output_tokens", 500),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop"}),
	))
	llm.End()
	_, bad := tr.Start(ctx, "tool lookup")
	bad.SetStatus(codes.Error, "lookup failed")
	bad.End()
	root.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	traceID := root.SpanContext().TraceID().String()
	tree, err := st.Tree(context.Background(), "otel-"+traceID)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Task.Pipeline != "py-agent" || len(tree.Executions) != 1 || len(tree.Executions[0].Spans) != 3 {
		t.Fatalf("task %+v with %d executions, want pipeline py-agent and one execution of 3 spans", tree.Task, len(tree.Executions))
	}
	byName := map[string]store.Span{}
	for _, sp := range tree.Executions[0].Spans {
		byName[sp.Name] = sp
		if sp.TraceID != traceID {
			t.Errorf("span %s has trace %s, want %s", sp.Name, sp.TraceID, traceID)
		}
	}
	chat := byName["chat gpt-4o-mini"]
	if chat.Kind != store.SpanClient || chat.ParentSpanID != root.SpanContext().SpanID().String() {
		t.Errorf("chat span %+v: want a client span under the root", chat)
	}
	if got := chat.Attributes[store.AttrGenAIProviderName].Str(); got != "openai" {
		t.Errorf("gen_ai.provider.name %q, want openai (from the deprecated gen_ai.system)", got)
	}
	// gpt-4o-mini: $0.15 / $0.60 per million tokens in the built-in table.
	if got := chat.Attributes["sextant.cost_usd"].Float(); got < 0.00044 || got > 0.00046 {
		t.Errorf("cost %v, want 0.00045", got)
	}
	if got := byName["tool lookup"].Status; got.Code != store.CodeError || got.Message != "lookup failed" {
		t.Errorf("status %+v", got)
	}
}

// TestJSON: OTLP/JSON with hex ids, as the JS and Python exporters send it.
func TestJSON(t *testing.T) {
	st, srv := receiver(t)
	body := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"ts-agent"}},{"key":"sextant.task","value":{"stringValue":"run-42"}}]},
	"scopeSpans":[{"scope":{"name":"x"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"chat claude","kind":3,
	"startTimeUnixNano":"1544712660000000000","endTimeUnixNano":"1544712661000000000",
	"attributes":[{"key":"gen_ai.usage.input_tokens","value":{"intValue":"12"}},{"key":"meta","value":{"kvlistValue":{"values":[{"key":"a","value":{"intValue":"1"}}]}}}],
	"status":{"code":1}}]}]}]}`
	resp, err := http.Post(srv.URL+otlp.Route, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "{}" {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	tree, err := st.Tree(context.Background(), "run-42")
	if err != nil {
		t.Fatal(err)
	}
	sp := tree.Executions[0].Spans[0]
	if sp.SpanID != "eee19b7ec3c1b174" || sp.Kind != store.SpanClient || sp.Status.Code != store.CodeOK ||
		sp.Attributes[store.AttrGenAIUsageInputTokens].Int() != 12 || sp.Attributes["meta"].Str() != `{"a":1}` {
		t.Errorf("span %+v", sp)
	}
}

// TestRewardAttributes: sextant.reward and sextant.reward.NAME on a span
// are rewards on its task, aimed at the span, on the unnamed and the named
// dimension; a look-alike key is only an attribute.
func TestRewardAttributes(t *testing.T) {
	st, srv := receiver(t)
	body := `{"resourceSpans":[{"resource":{"attributes":[{"key":"sextant.task","value":{"stringValue":"run-7"}}]},
	"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"answer",
	"startTimeUnixNano":"1544712660000000000","endTimeUnixNano":"1544712661000000000",
	"attributes":[{"key":"sextant.reward","value":{"intValue":"1"}},{"key":"sextant.reward.safety","value":{"doubleValue":-0.5}},{"key":"sextant.rewarded","value":{"boolValue":true}}]}]}]}]}`
	resp, err := http.Post(srv.URL+otlp.Route, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	rs, err := st.Rewards(context.Background(), "run-7")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Dimension != "" || rs[0].Value != 1 || rs[1].Dimension != "safety" || rs[1].Value != -0.5 ||
		rs[0].SpanID != "eee19b7ec3c1b174" || rs[1].SpanID != "eee19b7ec3c1b174" {
		t.Fatalf("rewards %+v", rs)
	}
	n, sum, err := st.RewardStats(context.Background(), "run-7")
	if err != nil || n != 1 || sum != 1 {
		t.Errorf("unnamed stats %d %v %v, want 1 1", n, sum, err)
	}
	dims, err := st.DimensionStats(context.Background(), "run-7")
	if err != nil || len(dims) != 1 || dims["safety"].Mean() != -0.5 {
		t.Errorf("dimensions %v %v", dims, err)
	}
}

// TestBadPayloads: each is a 4xx and writes nothing, even when other
// spans of the same request are fine.
func TestBadPayloads(t *testing.T) {
	st, srv := receiver(t)
	good := `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"ok","startTimeUnixNano":"1"}`
	wrap := func(spans ...string) string {
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Join(spans, ",") + `]}]}]}`
	}
	cases := []struct {
		name, ctype, body string
		status            int
		want              string
	}{
		{"not json", "application/json", `{"resourceSpans":`, 400, "decode traces"},
		{"garbage protobuf", "application/x-protobuf", "\xff\xff\xff\xff", 400, "decode traces"},
		{"short trace id", "application/json", wrap(good, `{"traceId":"5b8e","spanId":"eee19b7ec3c1b174","name":"x","startTimeUnixNano":"1"}`), 400, "spans[1]: trace id has 2 bytes, want 16"},
		{"zero span id", "application/json", wrap(good, `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000000","name":"x","startTimeUnixNano":"1"}`), 400, "span id is all zeros"},
		{"no name", "application/json", wrap(good, `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","startTimeUnixNano":"1"}`), 400, "name is empty"},
		{"no start", "application/json", wrap(`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","name":"x"}`), 400, "start time is missing"},
		{"ends first", "application/json", wrap(`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","name":"x","startTimeUnixNano":"5","endTimeUnixNano":"4"}`), 400, "ends before it starts"},
		{"not hex", "application/json", wrap(`{"traceId":"zz","spanId":"eee19b7ec3c1b175","name":"x","startTimeUnixNano":"1"}`), 400, "not hex"},
		{"bad task", "application/json", wrap(`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","name":"x","startTimeUnixNano":"1","attributes":[{"key":"sextant.task","value":{"stringValue":"a/b"}}]}`), 400, "is not a task id"},
		{"reward out of range", "application/json", wrap(good, `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","name":"x","startTimeUnixNano":"1","attributes":[{"key":"sextant.reward.safety","value":{"doubleValue":1.5}}]}`), 400, "sextant.reward.safety: 1.5 is out of range"},
		{"reward not a number", "application/json", wrap(good, `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","name":"x","startTimeUnixNano":"1","attributes":[{"key":"sextant.reward","value":{"stringValue":"good"}}]}`), 400, "sextant.reward: want a number"},
		{"bad dimension", "application/json", wrap(good, `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","name":"x","startTimeUnixNano":"1","attributes":[{"key":"sextant.reward.9x","value":{"intValue":"1"}}]}`), 400, `reward dimension \"9x\"`},
		{"text", "text/plain", good, 415, "content type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+otlp.Route, c.ctype, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
				t.Errorf("status %d %s, want %d containing %q", resp.StatusCode, b, c.status, c.want)
			}
		})
	}
	ts, err := st.Tasks(context.Background(), store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 0 {
		t.Errorf("%d tasks written by bad payloads, want none", len(ts))
	}
}

// TestOwnExportRoundTrip: sextant's own OTLP file export, posted to the
// receiver, gives back the same tasks: each task's spans under its own id
// and execution (not split into a task per trace), and the receiver's
// store exports the very same document.
func TestOwnExportRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	data, err := os.ReadFile("../../../pipelines/email-triage/dataset.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Import(ctx, bytes.NewReader(data), "dataset.jsonl"); err != nil {
		t.Fatal(err)
	}
	q := store.Query{Limit: 30}
	var sent bytes.Buffer
	n, err := src.ExportOTLP(ctx, &sent, store.OTLPOptions{Query: q})
	if err != nil || n == 0 {
		t.Fatalf("export: %d spans, %v", n, err)
	}

	dst, srv := receiver(t)
	resp, err := http.Post(srv.URL+otlp.Route, "application/json", bytes.NewReader(sent.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %s %s", resp.Status, body)
	}

	var back bytes.Buffer
	if _, err := dst.ExportOTLP(ctx, &back, store.OTLPOptions{Query: q}); err != nil {
		t.Fatal(err)
	}
	if sent.String() != back.String() {
		a, b := sent.String(), back.String()
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		t.Fatalf("the export posted back differs at byte %d:\nsent %s\nback %s", i, a[max(0, i-200):min(len(a), i+200)], b[max(0, i-200):min(len(b), i+200)])
	}
	// Same tasks, each with its one recorded execution and pipeline.
	var tasks int
	err = src.EachTask(ctx, q, func(want *store.Task) error {
		tasks++
		wt, err := src.Tree(ctx, want.ID)
		if err != nil {
			return err
		}
		got, err := dst.Tree(ctx, want.ID)
		if err != nil {
			return fmt.Errorf("task %s not received: %w", want.ID, err)
		}
		if got.Task.Pipeline != want.Pipeline || len(got.Executions) != len(wt.Executions) {
			return fmt.Errorf("task %s: pipeline %q, %d executions; want %q, %d", want.ID, got.Task.Pipeline, len(got.Executions), want.Pipeline, len(wt.Executions))
		}
		for i, e := range got.Executions {
			w := wt.Executions[i]
			if e.Execution.ID != w.Execution.ID || e.Execution.TraceID != w.Execution.TraceID || len(e.Spans) != len(w.Spans) {
				return fmt.Errorf("task %s: execution %s (trace %s, %d spans), want %s (trace %s, %d spans)", want.ID,
					e.Execution.ID, e.Execution.TraceID, len(e.Spans), w.Execution.ID, w.Execution.TraceID, len(w.Spans))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var received int
	if err := dst.EachTask(ctx, store.Query{}, func(*store.Task) error { received++; return nil }); err != nil {
		t.Fatal(err)
	}
	if tasks != 30 || received != tasks {
		t.Fatalf("sent %d tasks, the receiver holds %d", tasks, received)
	}
}
