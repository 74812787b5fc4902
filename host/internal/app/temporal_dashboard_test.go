//go:build !notemporal

package app

import (
	"context"
	"fmt"
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
// waiting, under the waiting filter, and pages through the cluster's
// runs one a page by its next-page links; its page shows the steps done
// so far; its
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
	for _, id := range []string{"dash-2", "dash-3", "dash-temporal"} {
		res, err := b.Run(ctx, RunRequest{Prep: prep, Input: run.Input{ID: id, Input: f.input}})
		if err != nil || res.Status != store.StatusWaiting {
			t.Fatalf("run %s on Temporal: %+v, %v; want waiting for a person", id, res, err)
		}
	}
	prep.Close(ctx)

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
	var listed string
	browse("list the waiting runs",
		chromedp.Navigate(base+"/#/?status=waiting"),
		chromedp.WaitVisible(row, chromedp.ByQuery),
		chromedp.Text(row+` td:nth-child(2)`, &listed, chromedp.ByQuery))
	if listed != "waiting" {
		t.Fatalf("the list shows the run %q", listed)
	}

	// One run a page: each page loaded afresh from the previous one's link
	// (the page after a full last one lists none, as a cursor cannot tell).
	var paged []string
	for page, href := 0, "#/?status=waiting&limit=1"; href != ""; page++ {
		if page > 4 {
			t.Fatalf("more pages than runs: %v", paged)
		}
		var id string
		var rows int
		browse("page "+href,
			chromedp.Navigate(base+fmt.Sprintf("/?page=%d", page)+href),
			chromedp.WaitVisible(`#runs-table`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector("#runs-table tbody tr[data-task]")?.dataset.task || ""`, &id),
			chromedp.Evaluate(`document.querySelectorAll("#runs-table tbody tr[data-task]").length`, &rows),
			chromedp.Evaluate(`document.querySelector("#runs p.muted a")?.getAttribute("href") || ""`, &href))
		if rows > 1 {
			t.Fatalf("page %d lists %d runs, limit 1", page+1, rows)
		}
		if id != "" {
			paged = append(paged, id)
		}
	}
	if slices.Sort(paged); !slices.Equal(paged, []string{"dash-2", "dash-3", "dash-temporal"}) {
		t.Fatalf("the pages of one run list %v, want each run once", paged)
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
