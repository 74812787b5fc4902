package serve_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// longDimension is a reward dimension whose metric name
// (reward.longDimension) is longer than the plot's label column would be
// for the built-in metrics.
const longDimension = "helpfulness_for_long_customer_tickets"

// matrixJudgment judges replay results of twelve tasks: m-00..m-02
// regress (m-00 with a different output), m-03 and m-04 improve, m-05's
// candidate replay fails with an error, m-06 ends with a different output
// and the same result, the rest agree.
func matrixJudgment(t *testing.T, e *env) (*evolve.Judgment, []string) {
	t.Helper()
	base, cand := fixtureStrategies(t, e)
	var results []replay.Result
	var regressed []string
	for i := range 12 {
		id := fmt.Sprintf("m-%02d", i)
		b := replay.Result{Task: id, Hash: base.Hash(), Status: store.StatusCompleted, LatencyMS: 800 + float64(i),
			Output:  map[string]any{"action": "archive"},
			Outcome: sdk.TaskResult{Success: true, Reward: 1, CostUSD: 0.002, Rewards: map[string]float64{longDimension: 0.8}}}
		c := b
		c.Hash, c.LatencyMS = cand.Hash(), 1200+float64(i)
		c.Outcome.Rewards = map[string]float64{longDimension: 0.9}
		switch {
		case i < 3:
			c.Outcome.Success, c.Outcome.Reward = false, -1
			regressed = append(regressed, id)
			if i == 0 {
				c.Output = map[string]any{"action": "reply"}
			}
		case i < 5:
			b.Outcome.Success, b.Outcome.Reward = false, -1
		case i == 5:
			c.Status, c.Error, c.Output = store.StatusFailed, "step classify: provider default: 503 Service Unavailable", nil
		case i == 6:
			c.Output = map[string]any{"action": "flag_financial"}
		}
		results = append(results, b, c)
	}
	return evolve.Judge(context.Background(), results, base, cand, nil, evolve.Options{Seed: 1}), regressed
}

// textBox is one text of the forest plot and whether its box lies inside
// the plot's.
type textBox struct {
	Text   string  `json:"text"`
	Inside bool    `json:"inside"`
	Left   float64 `json:"left"`
	Right  float64 `json:"right"`
}

// plotTexts measures every text of the page's forest plot against the
// plot's own box, in the browser's layout.
const plotTexts = `(() => {
  const svg = document.querySelector("svg.forest");
  const b = svg.getBoundingClientRect();
  return [...svg.querySelectorAll("text")].map((t) => {
    const r = t.getBoundingClientRect();
    return { text: t.textContent, left: r.left - b.left, right: b.right - r.right,
      inside: r.width > 0 && r.left >= b.left && r.right <= b.right && r.top >= b.top && r.bottom <= b.bottom };
  });
})()`

// visibleTasks are the tasks of the matrix rows the browser lays out.
const visibleTasks = `[...document.querySelectorAll("#matrix tbody tr")].filter((r) => r.getClientRects().length > 0).map((r) => r.dataset.task)`

// TestDashboardMatrix opens a stored comparison in a real headless
// Chromium: the matrix lists every task under both strategies, the
// "regressed" filter keeps exactly the regressed tasks, and every text of
// the forest plot (the HTML report's, served as forest_svg) lies inside
// the plot's box, its p-values printed as the CLI prints them. The other
// filters and the plot of a narrow window are checked too. Screenshots go
// to the artifacts folder.
func TestDashboardMatrix(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary here (CI installs Debian's chromium: apt-get install -y chromium)")
	}
	e := newEnv(t, "127.0.0.1:0")
	j, regressed := matrixJudgment(t, e)
	v, err := evolve.NewVerdict(j, "gate", "email-triage", "", time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var saved evolve.Verdict
	e.do("POST", "/api/v1/comparisons", v).want(t, 201).json(t, &saved)

	out := artifacts(t)
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancelTimeout := context.WithTimeout(bctx, 2*time.Minute) // a bound on a hung browser, not a timing assumption
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
	filter := func(kind string) []string {
		t.Helper()
		var tasks []string
		browse("filter "+kind,
			chromedp.Click(`#matrix-section button[data-filter="`+kind+`"]`, chromedp.ByQuery),
			chromedp.WaitReady(`#matrix[data-filter="`+kind+`"]`, chromedp.ByQuery),
			chromedp.Evaluate(visibleTasks, &tasks))
		return tasks
	}

	var all []string
	var texts []textBox
	browse("open the comparison",
		chromedp.Navigate(e.base+"/#/comparison/"+saved.ID),
		chromedp.WaitVisible(`#matrix tbody tr[data-task]`, chromedp.ByQuery),
		chromedp.WaitVisible(`svg.forest text`, chromedp.ByQuery),
		chromedp.Evaluate(visibleTasks, &all),
		chromedp.Evaluate(plotTexts, &texts),
		shot("matrix-all"))
	if len(all) != 12 {
		t.Fatalf("matrix shows %d tasks, want 12: %v", len(all), all)
	}

	got := filter("regressed")
	browse("screenshot", shot("matrix-regressed"))
	if !slices.Equal(got, regressed) {
		t.Fatalf("the regressed filter shows %v, want %v", got, regressed)
	}

	// The plot: a label per metric (the long one included), every text
	// inside the plot's box, p-values as the CLI prints them.
	checkPlot := func(texts []textBox) {
		t.Helper()
		labels, long, small := 0, false, false
		for _, tb := range texts {
			if !tb.Inside {
				t.Errorf("plot text %q is outside the plot (%.1f px from its left edge, %.1f from its right)", tb.Text, tb.Left, tb.Right)
			}
			if strings.Contains(tb.Text, "p=0.000") {
				t.Errorf("plot text %q: a p-value below 0.001 reads p<0.001", tb.Text)
			}
			long = long || strings.HasPrefix(tb.Text, "reward.helpfulness_for")
			small = small || strings.HasSuffix(tb.Text, "p<0.001")
		}
		for _, m := range saved.Comparison.Metrics {
			if slices.ContainsFunc(texts, func(tb textBox) bool {
				cut, ok := strings.CutSuffix(tb.Text, "…")
				return tb.Text == m.Name || ok && strings.HasPrefix(m.Name, cut)
			}) {
				labels++
			}
		}
		if labels != len(saved.Comparison.Metrics) || !long || !small {
			t.Errorf("plot labels %d of %d metrics (long label %v, a p<0.001 %v): %+v", labels, len(saved.Comparison.Metrics), long, small, texts)
		}
	}
	checkPlot(texts)

	// The other filters, and back to all.
	for kind, want := range map[string][]string{
		"improved": {"m-03", "m-04"},
		"differs":  {"m-00", "m-05", "m-06"},
		"error":    {"m-05"},
		"all":      all,
	} {
		if got := filter(kind); !slices.Equal(got, want) {
			t.Errorf("the %s filter shows %v, want %v", kind, got, want)
		}
	}

	// A narrow window scales the plot down: its texts stay inside.
	browse("narrow window",
		chromedp.EmulateViewport(480, 900),
		chromedp.WaitVisible(`svg.forest text`, chromedp.ByQuery),
		chromedp.Evaluate(plotTexts, &texts),
		shot("matrix-narrow"))
	checkPlot(texts)
}
