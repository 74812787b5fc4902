package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sextant-dev/sextant/host/evolve"
	"github.com/sextant-dev/sextant/host/strategy"
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
// the review. Screenshots of each page go to the artifacts folder.
func TestDashboard(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary here (CI installs Debian's chromium: apt-get install -y chromium)")
	}
	e := newEnv(t, "127.0.0.1:0")
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
	t.Logf("screenshots in %s", out)
}
