package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// chromium finds a Chromium or Chrome binary; "" when there is none.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifacts is where screenshots go: $SEXTANT_ARTIFACTS, else a
// temporary folder.
func artifacts(t *testing.T) string {
	dir := os.Getenv("SEXTANT_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDashboard opens the embedded dashboard in a real headless Chromium
// on a store holding runs of the three example pipelines, a judged
// replay and a review: it lists the runs, opens a task and finds the
// prompt text in its waterfall, adds a reward through the form, opens
// the comparison and finds a flipped task's two outputs, and approves
// the review. Then an agent records a call through the server's proxy
// and exports spans with the OpenTelemetry Go SDK to its /v1/traces: the
// proxy's task page shows the prompt and the reply, the exported trace's
// task page its spans with their tokens. Last, a tool-using agent's
// task pages and comparison show its tool calls (toolDashboard).
// Screenshots of each page go to the artifacts folder.
func TestDashboard(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary here (CI installs Debian's chromium: apt-get install -y chromium)")
	}
	up := newUpstream(t)
	e := newEnv(t, "127.0.0.1:0", withProxy(t, up.URL, false))
	ctx := context.Background()
	runs := runAll(t, e)
	inv := runs["invoice"]
	base, cand := fixtureStrategies(t, e)
	j := judged(t, base, cand, []string{runs["invoice"].Task, runs["meeting"].Task, runs["newsletter"].Task})
	v, err := evolve.NewVerdict(j, "gate", "email-triage", "", time.Now(), func(task, hash string) (json.RawMessage, bool) {
		who := "baseline"
		if hash == cand.Hash() {
			who = "candidate"
		}
		return json.RawMessage(fmt.Sprintf(`{"action":"%s-answer-for-%s"}`, who, task)), true
	})
	if err != nil {
		t.Fatal(err)
	}
	var saved evolve.Verdict
	e.do("POST", "/api/v1/comparisons", v).want(t, 201).json(t, &saved)
	review, err := evolve.Queue(ctx, e.store, "email-triage", evolve.Evaluated{Mutator: "greedy", Strategy: cand, Comparison: j.Comparison,
		Result: evolve.Result{Ruling: sdk.Review, Gates: []evolve.GateResult{{Name: "human-review", Ruling: sdk.Review, Reasons: []string{"a person decides"}}}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	out := artifacts(t)
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancelTimeout := context.WithTimeout(bctx, 3*time.Minute) // a bound on a hung browser, not a timing assumption
	defer cancelTimeout()

	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var buf []byte
			if err := chromedp.FullScreenshot(&buf, 100).Do(ctx); err != nil { // quality 100: PNG
				return err
			}
			return os.WriteFile(filepath.Join(out, name+".png"), buf, 0o644)
		})
	}
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// The run list, with every example run.
	var rows int
	run("list runs",
		chromedp.Navigate(e.base+"/#/"),
		chromedp.WaitVisible(`#runs-table tbody tr[data-task]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#runs-table tbody tr[data-task]").length`, &rows),
		shot("runs"))
	if rows != len(runs) {
		t.Fatalf("the run list shows %d tasks, want %d", rows, len(runs))
	}
	// A run started meanwhile appears without a reload (the list polls).
	e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "research-report", "id": "live-1",
		"input": readJSON(t, filepath.Join(e.pipelines, "research-report", "inputs", "question.json"))}).want(t, 200)
	run("live update", chromedp.WaitVisible(`#runs-table tr[data-task="live-1"]`, chromedp.ByQuery))

	// A task: the prompt text is in its waterfall.
	var waterfall string
	run("open a task",
		chromedp.Click(`#runs-table a[href="#/task/`+inv.Task+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.waterfall .span-row`, chromedp.ByQuery),
		chromedp.Text(`.waterfall`, &waterfall, chromedp.ByQuery),
		shot("task"))
	if !strings.Contains(waterfall, "Invoice 4471 overdue") || !strings.Contains(waterfall, "flag_financial") {
		t.Fatalf("the waterfall lacks the prompt or the reply:\n%s", waterfall)
	}

	// Add a reward through the form.
	var notice string
	run("add a reward",
		chromedp.SetValue(`#reward-form input[name=value]`, "0.5", chromedp.ByQuery),
		chromedp.SetValue(`#reward-form input[name=tags]`, "from-browser, checked", chromedp.ByQuery),
		chromedp.SetValue(`#reward-form input[name=note]`, "looks right", chromedp.ByQuery),
		chromedp.Click(`#reward-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#reward-message .notice`, chromedp.ByQuery),
		chromedp.Text(`#reward-message .notice`, &notice, chromedp.ByQuery),
		shot("task-rewarded"))
	rs, err := e.store.Rewards(ctx, inv.Task)
	if err != nil || len(rs) != 1 || rs[0].Value != 0.5 || !slices.Equal(rs[0].Tags, []string{"checked", "from-browser"}) || rs[0].Note != "looks right" {
		t.Fatalf("rewards after the form (%q): %v %+v", notice, err, rs)
	}

	// The comparison: forest plot, and the flipped task's two outputs.
	var baseOut, candOut string
	var circles int
	run("open the comparison",
		chromedp.Navigate(e.base+"/#/comparisons"),
		chromedp.WaitVisible(`#comparisons-table a`, chromedp.ByQuery),
		chromedp.Click(`#comparisons-table a`, chromedp.ByQuery),
		chromedp.WaitVisible(`.flipped[data-task="`+inv.Task+`"]`, chromedp.ByQuery),
		chromedp.Text(`.flipped[data-task="`+inv.Task+`"] .baseline-output pre`, &baseOut, chromedp.ByQuery),
		chromedp.Text(`.flipped[data-task="`+inv.Task+`"] .candidate-output pre`, &candOut, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("svg.forest circle").length`, &circles),
		shot("comparison"))
	if !strings.Contains(baseOut, "baseline-answer-for-"+inv.Task) || !strings.Contains(candOut, "candidate-answer-for-"+inv.Task) {
		t.Fatalf("flipped task outputs: baseline %q, candidate %q", baseOut, candOut)
	}
	if circles != len(saved.Comparison.Metrics) || circles == 0 {
		t.Fatalf("forest plot has %d points, want %d", circles, len(saved.Comparison.Metrics))
	}

	// Approve the review.
	run("approve a review",
		chromedp.Navigate(e.base+"/#/reviews"),
		chromedp.WaitVisible(`.review[data-review="`+review.ID+`"] button.approve`, chromedp.ByQuery),
		chromedp.SetValue(`#reviewer`, "ana", chromedp.ByQuery),
		chromedp.Click(`.review[data-review="`+review.ID+`"] button.approve`, chromedp.ByQuery),
		chromedp.WaitVisible(`#review-message .notice`, chromedp.ByQuery),
		shot("reviews"))
	got, err := evolve.GetReview(ctx, e.store, review.ID)
	if err != nil || got.Status != evolve.ReviewApproved || got.By != "ana" {
		t.Fatalf("review after approving: %v %+v", err, got)
	}
	if _, err := strategy.Load(got.Path); err != nil {
		t.Fatalf("promoted strategy: %v", err)
	}

	// Lineage and metrics render.
	var lineage string
	run("strategies and metrics",
		chromedp.Navigate(e.base+"/#/strategy/email-handler"),
		chromedp.WaitVisible(`.lineage li`, chromedp.ByQuery),
		chromedp.Text(`.lineage`, &lineage, chromedp.ByQuery),
		shot("strategy"),
		chromedp.Navigate(e.base+"/#/metrics"),
		chromedp.WaitVisible(`#metrics-table tbody tr`, chromedp.ByQuery),
		shot("metrics"))
	if !strings.Contains(lineage, "2.1.0") || !strings.Contains(lineage, "2.0.0") {
		t.Fatalf("lineage: %q", lineage)
	}

	// A call recorded by the proxy: its task page shows prompt and reply.
	const question = "Which invoice is overdue, 4471 or 4472?"
	a := e.do("POST", "/v1/chat/completions", map[string]any{"model": "gpt-4o-mini",
		"messages": []any{map[string]any{"role": "user", "content": question}}}, "X-Sextant-Task: agent-call-1").want(t, 200)
	if a.header.Get("X-Sextant-Recorded") != "false" {
		t.Fatalf("proxy call: %s", a.body)
	}
	var call string
	run("open a proxy-recorded task",
		chromedp.Navigate(e.base+"/#/task/agent-call-1"),
		chromedp.WaitVisible(`.waterfall .span-detail .response pre`, chromedp.ByQuery),
		chromedp.Text(`.waterfall`, &call, chromedp.ByQuery),
		shot("task-proxy"))
	if !strings.Contains(call, question) || !strings.Contains(call, "Upstream answers: "+question) || !strings.Contains(call, "chat gpt-4o-mini") {
		t.Fatalf("the proxy task's waterfall lacks the prompt, the reply or the span:\n%s", call)
	}

	// Spans from the OpenTelemetry Go SDK's OTLP/HTTP exporter (protobuf)
	// sent to the server: the task page of their trace shows them.
	traceID, rootSpan := exportSpans(t, e.base+"/v1/traces")
	var spans string
	run("open an OTLP-ingested task",
		chromedp.Navigate(e.base+"/#/task/otel-"+traceID),
		chromedp.WaitVisible(`.waterfall .span-row[data-span="`+rootSpan+`"]`, chromedp.ByQuery), // this page's, not the last one's
		chromedp.Text(`.waterfall`, &spans, chromedp.ByQuery),
		shot("task-otlp"))
	for _, want := range []string{"invoke_agent triage", "chat gpt-4o-mini", "1200/300 tok", "tool lookup"} {
		if !strings.Contains(spans, want) {
			t.Fatalf("the OTLP task's waterfall lacks %q:\n%s", want, spans)
		}
	}
	toolDashboard(t, e, run, shot)
	t.Logf("screenshots in %s", out)
}

// toolDashboard runs tasks of a tool-using agent (pipelines/support-agent)
// into e's store: a refund (two calls, recorded) and an account closing
// (blocked by never_execute). The refund's waterfall has an execute_tool
// span per call whose detail shows the call's arguments and result from
// its recording; the closing's shows the blocked call from its span. A
// real replay of both under the candidate that forbids refunds flips the
// refund, and its comparison shows the two strategies' calls side by
// side.
func toolDashboard(t *testing.T, e *env, browse func(string, ...chromedp.Action), shot func(string) chromedp.Action) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(e.pipelines, "support-agent")
	for _, in := range []struct {
		id    string
		input map[string]any
		truth string
	}{
		{"agent-lost", readJSON(t, filepath.Join(dir, "inputs", "lost.json")), `{"action":"refund"}`},
		{"agent-close", map[string]any{"order": "A1001", "message": "Please close my account"}, `{"action":"escalate"}`},
	} {
		var r runResult
		e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "support-agent", "id": in.id, "input": in.input, "truth": json.RawMessage(in.truth)}).want(t, 200).json(t, &r)
		if r.Status != "completed" {
			t.Fatalf("support-agent run %s: %+v", in.id, r)
		}
	}

	// detailOf is the text of the detail under the span named name.
	detailOf := func(name string) string {
		return `(() => { const row = [...document.querySelectorAll(".waterfall .span-row")].find((r) => r.querySelector(".span-name").textContent.trim() === ` +
			strconv.Quote(name) + `); return row ? row.nextElementSibling.innerText : "no span " + ` + strconv.Quote(name) + `; })()`
	}
	var fall, get, submit string
	browse("open a tool-using task",
		chromedp.Navigate(e.base+"/#/task/agent-lost"),
		chromedp.WaitVisible(`.waterfall .span-detail .tool-arguments pre`, chromedp.ByQuery),
		chromedp.Text(`.waterfall`, &fall, chromedp.ByQuery),
		chromedp.Evaluate(detailOf("execute_tool get"), &get),
		chromedp.Evaluate(detailOf("execute_tool submit"), &submit),
		shot("task-tools"))
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, c := range []struct{ want, text string }{
		{"execute_tool get", fall}, {"execute_tool submit", fall}, {`reply Let me look that order up. → get({"id":"A1001"})`, fall},
		{"tool call shop.get · executed", get}, {`arguments { "id": "A1001" }`, get}, {`"status":"lost"`, get},
		{"tool call shop.submit · executed", submit}, {`"kind": "refund"`, submit}, {`"amount": 64.9`, submit},
		{"result filed refund request REQ-", submit}, {`structured { "request": "REQ-`, submit},
	} {
		if !strings.Contains(flat(c.text), c.want) {
			t.Fatalf("the tool-using task's page lacks %q:\n%s", c.want, c.text)
		}
	}
	var blocked string
	browse("open a task whose tool call was blocked",
		chromedp.Navigate(e.base+"/#/task/agent-close"),
		chromedp.WaitVisible(`.waterfall .span-detail .tool-error pre`, chromedp.ByQuery),
		chromedp.Evaluate(detailOf("execute_tool submit"), &blocked),
		shot("task-tools-blocked"))
	if !strings.Contains(blocked, `"kind": "close_account"`) || !strings.Contains(flat(blocked), "tool call shop.submit · blocked") ||
		!strings.Contains(flat(blocked), "} blocked by policy error: blocked by policy: ") ||
		!strings.Contains(blocked, `matches "tool:shop.submit(kind=close_account)" in constraints.never_execute`) {
		t.Fatalf("the blocked call's detail:\n%s", blocked)
	}

	base, err := strategy.Load(filepath.Join(dir, "strategies", "support-policy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cand, err := strategy.Load(filepath.Join(dir, "candidates", "refunds-by-people.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var results []replay.Result
	prep := func(ctx context.Context) (*run.Prepared, error) {
		return prepare(ctx, filepath.Join(dir, "pipeline.toml"))
	}
	err = replay.Run(ctx, replay.Config{Prepare: prep, Source: e.store, Pipeline: "support-agent", Strategies: []*strategy.Strategy{base, cand}, OnMiss: replay.MissLive, Workers: 1, Logger: quiet()},
		func(r replay.Result) error { results = append(results, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	j := evolve.Judge(ctx, results, base, cand, nil, evolve.Options{Seed: 1})
	if !slices.Equal(j.Regressed, []string{"agent-lost"}) || len(j.ToolCalls["agent-lost"].Candidate) != 2 {
		t.Fatalf("judging the support agent's replays: regressed %v, tool calls %+v", j.Regressed, j.ToolCalls)
	}
	v, err := evolve.NewVerdict(j, "gate", "support-agent", "", time.Now(), func(task, hash string) (json.RawMessage, bool) {
		for _, r := range results {
			if r.Task == task && r.Hash == hash {
				return evolve.ClipOutput(r.Output)
			}
		}
		return nil, false
	})
	if err != nil {
		t.Fatal(err)
	}
	var saved evolve.Verdict
	e.do("POST", "/api/v1/comparisons", v).want(t, 201).json(t, &saved)
	var calls string
	browse("open the tool-using comparison",
		chromedp.Navigate(e.base+"/#/comparison/"+saved.ID),
		chromedp.WaitVisible(`.flipped[data-task="agent-lost"] table.tool-calls`, chromedp.ByQuery),
		chromedp.Text(`.flipped[data-task="agent-lost"] table.tool-calls`, &calls, chromedp.ByQuery),
		shot("comparison-tools"))
	for _, want := range []string{"baseline 1.0.0 tool calls", "candidate 1.1.0 tool calls", `shop.get({"id":"A1001"})`,
		`shop.submit({"details":{"amount":64.9,"currency":"EUR"},"id":"A1001","kind":"refund","note":"parcel lost by GLS"})`,
		"filed refund request REQ-", `blocked by policy: matches "tool:shop.submit(kind=refund)" in constraints.never_execute`} {
		if !strings.Contains(strings.ToLower(calls), strings.ToLower(want)) { // headers are in capitals (CSS)
			t.Fatalf("the flipped task's tool calls lack %q:\n%s", want, calls)
		}
	}
}

// exportSpans exports a small agent trace with the OpenTelemetry Go SDK
// (otlptracehttp, protobuf over real HTTP) to url and returns its trace
// id and its root span's id.
func exportSpans(t *testing.T, url string, opts ...otlptracehttp.Option) (string, string) {
	t.Helper()
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, append([]otlptracehttp.Option{otlptracehttp.WithEndpointURL(url), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "ts-agent"))))
	tr := tp.Tracer("agent")
	ctx, root := tr.Start(ctx, "invoke_agent triage")
	_, llm := tr.Start(ctx, "chat gpt-4o-mini", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", "openai"),
		attribute.String("gen_ai.request.model", "gpt-4o-mini"),
		attribute.Int("gen_ai.usage.input_tokens", 1200),
		attribute.Int("gen_ai.usage.output_tokens", 300)))
	llm.End()
	_, tool := tr.Start(ctx, "tool lookup")
	tool.End()
	root.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("export: %v", err)
	}
	return root.SpanContext().TraceID().String(), root.SpanContext().SpanID().String()
}
