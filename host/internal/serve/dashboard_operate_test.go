package serve_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// withRoute adds the route pipeline of the operate_incident testscript
// to the server's pipelines: its gateway's condition is null unless the
// input says urgent, so a run stops in an incident.
func withRoute(t *testing.T) envOpt {
	return func(o *serve.Options) {
		dir := filepath.Join(o.Pipelines, "route")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{
			"pipeline.toml": `name = "route"
[routine]
navigator = "bpmn"
file = "route.bpmn"
[strategy]
file = "strategy.toml"
[steps.ask]
kind = "expr"
set = { urgent = "input.urgent" }
[steps.fast]
kind = "expr"
set = { path = '"fast"' }
[steps.slow]
kind = "expr"
set = { path = '"slow"' }
`,
			"route.bpmn": `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
  <process id="route" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="ask"/>
    <scriptTask id="ask"/>
    <sequenceFlow id="f2" sourceRef="ask" targetRef="gw"/>
    <exclusiveGateway id="gw" default="toSlow"/>
    <sequenceFlow id="toFast" sourceRef="gw" targetRef="fast"><conditionExpression>=vars.ask.urgent</conditionExpression></sequenceFlow>
    <sequenceFlow id="toSlow" sourceRef="gw" targetRef="slow"/>
    <scriptTask id="fast"/>
    <scriptTask id="slow"/>
    <sequenceFlow id="f3" sourceRef="fast" targetRef="end"/>
    <sequenceFlow id="f4" sourceRef="slow" targetRef="end"/>
    <endEvent id="end"/>
  </process>
</definitions>
`,
			"strategy.toml": `[metadata]
name = "ops"
version = "1.0.0"
created_at = 2026-01-01T00:00:00Z
[parameters]
user_confirmation = 0.5
[evolution]
max_parameter_delta = 0.1
branch_type = "experimental"
`,
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDashboardOperate operates runs from the dashboard in a real
// headless Chromium, as sextant resume, cancel, retry and strategy
// promote/rollback do: it answers a waiting person's step through the
// form built from the question and options the run recorded (the run
// completes with that answer), cancels a waiting task with a reason
// (stored with who and why), retries a run stopped in an incident with a
// variable set (it completes on the path the variable picks), and on the
// Strategies page rolls the live version back and promotes it again.
// Screenshots of each step go to the artifacts folder.
func TestDashboardOperate(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary here (CI installs Debian's chromium: apt-get install -y chromium)")
	}
	e := newEnv(t, "127.0.0.1:0", withRoute(t))
	ctx := context.Background()
	runs := runAll(t, e)
	inv := runs["invoice"]
	var again runResult
	e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "email-triage", "id": "invoice-again",
		"input": readJSON(t, filepath.Join(e.pipelines, "email-triage", "inputs", "invoice.json"))}).want(t, 200).json(t, &again)
	if inv.Status != "waiting" || again.Status != "waiting" {
		t.Fatalf("want both invoice runs waiting for a person: %+v %+v", inv, again)
	}
	var inc runResult
	e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "route", "id": "route-1", "input": map[string]any{}}).want(t, 200).json(t, &inc)
	if inc.Status != "incident" {
		t.Fatalf("route run: %+v", inc)
	}
	// An approved candidate makes email-triage's live version 2.1.0, so
	// there is a version to roll back from.
	base, cand := fixtureStrategies(t, e)
	j := judged(t, base, cand, []string{runs["invoice"].Task, runs["meeting"].Task, runs["newsletter"].Task})
	review, err := evolve.Queue(ctx, e.store, "email-triage", evolve.Evaluated{Mutator: "greedy", Strategy: cand, Comparison: j.Comparison,
		Result: evolve.Result{Ruling: sdk.Review}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.do("POST", "/api/v1/reviews/"+review.ID+"/approve", map[string]any{"by": "ana"}).want(t, 200)

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
			if err := chromedp.FullScreenshot(&buf, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(out, name+".png"), buf, 0o644)
		})
	}
	browse := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	task := func(id string) *store.Task {
		t.Helper()
		tk, err := e.store.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}

	// Answer the invoice's question: the form offers the step's options.
	var question string
	var choices []string
	browse("open a waiting task",
		chromedp.Navigate(e.base+"/#/task/"+inv.Task),
		chromedp.WaitVisible(`.answer-form[data-node="confirm"] input[value="yes"]`, chromedp.ByQuery),
		chromedp.Evaluate(`localStorage.setItem("sextant-reviewer", "ana")`, nil),
		chromedp.Text(`.answer-form[data-node="confirm"] .question`, &question, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('.answer-form[data-node="confirm"] input[name=answer]')].map((i) => i.value)`, &choices),
		shot("operate-waiting"))
	if !strings.Contains(question, `"Invoice 4471 overdue"?`) || strings.Contains(question, "--set") || !slices.Equal(choices, []string{"yes", "no"}) {
		t.Fatalf("the answer form: question %q, choices %v", question, choices)
	}
	var notice string
	browse("answer it",
		chromedp.Click(`.answer-form[data-node="confirm"] input[value="yes"]`, chromedp.ByQuery),
		chromedp.Click(`.answer-form[data-node="confirm"] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#operate-message .notice`, chromedp.ByQuery),
		chromedp.Text(`#operate-message .notice`, &notice, chromedp.ByQuery),
		shot("operate-answered"))
	if tk := task(inv.Task); tk.Status != store.StatusCompleted || !strings.Contains(notice, "completed") {
		t.Fatalf("after answering: task %s, notice %q", tk.Status, notice)
	}
	tree, err := e.store.Tree(ctx, inv.Task)
	if err != nil {
		t.Fatal(err)
	}
	answered := false
	for _, h := range tree.Recordings {
		r, err := e.store.Recording(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		answered = answered || r.Kind == store.RecordHuman && strings.Contains(string(r.Response), `"yes"`)
	}
	if !answered {
		t.Fatalf("no recorded answer yes among %d recordings", len(tree.Recordings))
	}

	// Cancel the other invoice's task with a reason.
	browse("cancel a task",
		chromedp.Navigate(e.base+"/#/task/"+again.Task),
		chromedp.WaitVisible(`#cancel-form button`, chromedp.ByQuery),
		chromedp.SetValue(`#cancel-form input[name=reason]`, "sent twice", chromedp.ByQuery),
		chromedp.Click(`#cancel-form button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#operate-message .notice`, chromedp.ByQuery),
		chromedp.Text(`#operate-message .notice`, &notice, chromedp.ByQuery),
		shot("operate-cancelled"))
	tk := task(again.Task)
	if tk.Status != store.StatusCancelled || tk.Cancelled == nil || tk.Cancelled.By != "ana" || tk.Cancelled.Reason != "sent twice" {
		t.Fatalf("after cancelling: %s %+v (notice %q)", tk.Status, tk.Cancelled, notice)
	}
	var forms int
	browse("a cancelled task offers nothing", chromedp.Evaluate(`document.querySelectorAll("#operate form").length`, &forms))
	if forms != 0 {
		t.Errorf("a cancelled task's page offers %d operator forms", forms)
	}

	// Retry the incident: a bad value is refused in the page, then the
	// variable set picks the gateway's path.
	var incident, refusal string
	browse("retry an incident",
		chromedp.Navigate(e.base+"/#/task/route-1"),
		chromedp.WaitVisible(`#retry-form textarea`, chromedp.ByQuery),
		chromedp.Text(`#incident`, &incident, chromedp.ByQuery),
		chromedp.SetValue(`#retry-form textarea`, "ask={bad", chromedp.ByQuery),
		chromedp.Click(`#retry-form button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#operate-message .error-box`, chromedp.ByQuery),
		chromedp.Text(`#operate-message .error-box`, &refusal, chromedp.ByQuery),
		shot("operate-incident"),
		chromedp.SetValue(`#retry-form textarea`, `ask={"urgent": true}`, chromedp.ByQuery),
		chromedp.Click(`#retry-form button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#operate-message .notice`, chromedp.ByQuery),
		chromedp.Text(`#operate-message .notice`, &notice, chromedp.ByQuery),
		shot("operate-retried"))
	if !strings.Contains(incident, `route.bpmn:9 gw`) || !strings.Contains(refusal, "ask: not valid JSON") {
		t.Fatalf("incident %q, refusal %q", incident, refusal)
	}
	if tk := task("route-1"); tk.Status != store.StatusCompleted || !strings.Contains(notice, "completed") {
		t.Fatalf("after the retry: %s (notice %q)", tk.Status, notice)
	}

	// The live version: roll back to 2.0.0, then promote 2.1.0 again.
	var live string
	browse("roll back the live version",
		chromedp.Navigate(e.base+"/#/strategies"),
		chromedp.WaitVisible(`#live-table tr[data-pipeline="email-triage"] button.rollback`, chromedp.ByQuery),
		chromedp.Text(`#live-table tr[data-pipeline="email-triage"] .live-version`, &live, chromedp.ByQuery),
		shot("operate-live"),
		chromedp.Click(`#live-table tr[data-pipeline="email-triage"] button.rollback`, chromedp.ByQuery),
		chromedp.WaitVisible(`#live-message .notice`, chromedp.ByQuery),
		chromedp.Text(`#live-message .notice`, &notice, chromedp.ByQuery),
		shot("operate-rolled-back"))
	if !strings.Contains(live, "2.1.0") || !strings.Contains(notice, "2.0.0 is live (rollback)") {
		t.Fatalf("live before %q, after the rollback %q", live, notice)
	}
	browse("promote a version",
		chromedp.SetValue(`#live-table tr[data-pipeline="email-triage"] select.version`, "2.1.0", chromedp.ByQuery),
		chromedp.Click(`#live-table tr[data-pipeline="email-triage"] button.promote`, chromedp.ByQuery),
		chromedp.Poll(`(document.querySelector("#live-message .notice") || {}).textContent?.includes("(promote)")`, nil),
		chromedp.Text(`#live-message .notice`, &notice, chromedp.ByQuery),
		shot("operate-promoted"))
	var l evolve.Live
	e.do("GET", "/api/v1/pipelines/email-triage/live", nil).want(t, 200).json(t, &l)
	if !strings.Contains(notice, "2.1.0 is live (promote)") || l.Live.Version != "2.1.0" || l.Live.By != "ana" {
		t.Fatalf("after promoting: notice %q, live %+v", notice, l.Live)
	}
	t.Logf("screenshots in %s", out)
}
