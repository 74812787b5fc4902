//go:build !notemporal

package app

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestDashboardOperatesTemporalRun opens the dashboard of a sextant serve
// --temporal in a real headless Chromium: the runs list shows a run
// waiting for a person on the cluster (which the store lacks) as
// waiting, under the waiting filter, with the note that the cluster's
// runs are on the first page; its page shows the steps done so far; its
// cancel button cancels the workflow, and the page then shows it
// cancelled by the operator, as the store records it.
func TestDashboardOperatesTemporalRun(t *testing.T) {
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium binary here (CI installs Debian's chromium: apt-get install -y chromium)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound on a hung browser or cluster, not a timing assumption
	defer cancel()
	f, tt, _, base := serveOnTemporal(ctx, t, "q-serve-dashboard")
	b := open(t, Target{Temporal: tt})
	prep, err := prepare(ctx, f.pipeline)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Run(ctx, RunRequest{Prep: prep, Input: run.Input{ID: "dash-temporal", Input: f.input}})
	prep.Close(ctx)
	if err != nil || res.Status != store.StatusWaiting {
		t.Fatalf("run on Temporal: %+v, %v; want waiting for a person", res, err)
	}

	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	browse := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	row := `#runs-table tr[data-task="dash-temporal"]`
	var listed, note string
	browse("list the waiting runs",
		chromedp.Navigate(base+"/#/?status=waiting"),
		chromedp.WaitVisible(row, chromedp.ByQuery),
		chromedp.Text(row+` td:nth-child(2)`, &listed, chromedp.ByQuery),
		chromedp.Text(`#cluster-note`, &note, chromedp.ByQuery))
	if listed != "waiting" || !strings.Contains(note, "first page") {
		t.Fatalf("the list shows the run %q, note %q", listed, note)
	}

	var status, waiting string
	var spans int
	browse("open the run",
		chromedp.Navigate(base+"/#/task/dash-temporal"),
		chromedp.WaitVisible(`#cancel-form button`, chromedp.ByQuery),
		chromedp.Evaluate(`localStorage.setItem("sextant-reviewer", "ana")`, nil),
		chromedp.Text(`dl.kv dd:nth-of-type(1)`, &status, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll("dl.kv dt")].find((d) => d.textContent === "waiting for")?.nextElementSibling.textContent || ""`, &waiting),
		chromedp.Evaluate(`[...document.querySelectorAll(".execution .span-row .span-name")].filter((n) => n.textContent.includes("classify")).length`, &spans))
	if status != "waiting" || !strings.Contains(waiting, "Invoice") || spans == 0 {
		t.Fatalf("the run's page shows status %q, waiting for %q, %d spans of the classify step", status, waiting, spans)
	}

	var notice, cancelled string
	browse("cancel it",
		chromedp.SetValue(`#cancel-form input[name=reason]`, "sent twice", chromedp.ByQuery),
		chromedp.Click(`#cancel-form button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#operate-message .notice`, chromedp.ByQuery),
		chromedp.Text(`#operate-message .notice`, &notice, chromedp.ByQuery),
		chromedp.Text(`dl.kv dd:nth-of-type(1)`, &status, chromedp.ByQuery),
		chromedp.Text(`#cancelled`, &cancelled, chromedp.ByQuery))
	if !strings.Contains(notice, "cancelled") || status != "cancelled" || !strings.Contains(cancelled, "by ana: sent twice") {
		t.Fatalf("after the cancel: notice %q, status %q, cancelled %q", notice, status, cancelled)
	}
}
