package serve_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// liveAPI drives the live-version routes of email-triage, whose review
// TestAPI approved (2.1.0 is live): rollback, promote, bad input that
// changes nothing, two operators at once, and an approval refused because
// its candidate's parent is no longer live.
func liveAPI(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	const live = "/api/v1/pipelines/email-triage/live"
	var l evolve.Live
	e.do("GET", live, nil).want(t, 200).json(t, &l)
	if l.Live.Version != "2.1.0" || l.Live.Action != evolve.MoveApprove || l.Live.By != "ana" || l.Configured.Version != "2.0.0" || l.Runs != l.Live || len(l.History) != 2 {
		t.Fatalf("live after the approval %+v", l)
	}

	e.do("POST", "/api/v1/pipelines/email-triage/rollback", map[string]any{"reason": "complaints"}).want(t, 200).json(t, &l)
	if l.Live.Version != "2.0.0" || l.Live.Action != evolve.MoveRollback || l.Live.By != "api@127.0.0.1" || l.Live.Reason != "complaints" || l.Live.From != "2.1.0" {
		t.Fatalf("rolled back %+v", l)
	}

	// Bad input: a JSON error, and the live version stays.
	for _, tc := range []struct {
		name, path string
		body       any
		status     int
		code, msg  string
	}{
		{"unknown version", "/api/v1/pipelines/email-triage/promote", map[string]any{"version": "9.9.9"}, 400, "bad_request", `promote email-triage 9.9.9: no version "9.9.9" of strategy email-handler: only 2.0.0, 2.1.0 can be made live`},
		{"rollback to an unknown version", "/api/v1/pipelines/email-triage/rollback", map[string]any{"version": "1.0.0"}, 400, "bad_request", `rollback email-triage 1.0.0: no version "1.0.0"`},
		{"promote without version", "/api/v1/pipelines/email-triage/promote", map[string]any{}, 400, "bad_request", "version: name the version to promote"},
		{"unknown field", "/api/v1/pipelines/email-triage/promote", map[string]any{"version": "2.1.0", "force": true}, 400, "bad_request", ""},
		{"stale expectation", "/api/v1/pipelines/email-triage/promote", map[string]any{"version": "2.1.0", "expect": "2.1.0"}, 409, "conflict", "promote email-triage 2.1.0: the live version moved: 2.0.0 is live now (rollback by api@127.0.0.1 at "},
		{"unknown pipeline", "/api/v1/pipelines/nope/promote", map[string]any{"version": "2.1.0"}, 404, "not_found", `pipeline "nope" is not one of the server's`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := e.do("POST", tc.path, tc.body).want(t, tc.status)
			var got struct{ Error struct{ Message string } }
			a.json(t, &got)
			if code := a.errorCode(t); code != tc.code || !strings.HasPrefix(got.Error.Message, tc.msg) {
				t.Fatalf("%s: %s\nwant %s", code, got.Error.Message, tc.msg)
			}
			var now evolve.Live
			e.do("GET", live, nil).want(t, 200).json(t, &now)
			if now.Live.Version != "2.0.0" || len(now.History) != 3 {
				t.Fatalf("bad input moved it: %+v", now.Live)
			}
		})
	}
	e.do("GET", "/api/v1/pipelines/nope/live", nil).want(t, 404)

	// A candidate of 2.1.0 waits for review while 2.0.0 is live: approving
	// it would drop 2.1.0's change, so it is refused and nothing changes.
	_, promoted := fixtureStrategies(t, e)
	next, err := promoted.Revise(strategy.Revision{By: "test", At: time.Now().UTC().Truncate(time.Second),
		Parameters: []strategy.Set{{Parameter: "user_confirmation", To: promoted.Parameters["user_confirmation"] - 0.02, Reason: "test"}}})
	if err != nil {
		t.Fatal(err)
	}
	j := judged(t, promoted, next, []string{"t1", "t2"})
	rq, err := evolve.Queue(ctx, e.store, "email-triage", evolve.Evaluated{Mutator: "greedy", Strategy: next, Comparison: j.Comparison,
		Result: evolve.Result{Ruling: sdk.Review}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a := e.do("POST", "/api/v1/reviews/"+rq.ID+"/approve", map[string]any{"by": "bo"}).want(t, 409)
	if code := a.errorCode(t); code != "conflict" || !strings.Contains(string(a.body), "its parent is no longer live: it was derived from email-handler 2.1.0, but email-handler 2.0.0 is live in email-triage") {
		t.Fatalf("%s: %s", code, a.body)
	}
	if got, _ := evolve.GetReview(ctx, e.store, rq.ID); got.Status != evolve.ReviewPending {
		t.Fatalf("the refused request changed: %+v", got)
	}

	// Two operators promote at once from the version they both read:
	// one wins, the other gets a 409.
	status := make([]int, 2)
	var wg sync.WaitGroup
	for i := range status {
		wg.Go(func() {
			status[i] = e.do("POST", "/api/v1/pipelines/email-triage/promote", map[string]any{"version": "2.1.0", "expect": "2.0.0", "by": "op@host"}).status
		})
	}
	wg.Wait()
	if !(status[0] == 200 && status[1] == 409 || status[0] == 409 && status[1] == 200) {
		t.Fatalf("two promotions at once: %v", status)
	}
	e.do("GET", live, nil).want(t, 200).json(t, &l)
	if l.Live.Version != "2.1.0" || l.Live.By != "op@host" || len(l.History) != 4 {
		t.Fatalf("live %+v", l)
	}
	// 2.1.0 live again: the refused candidate can now be approved.
	var rv evolve.ReviewRequest
	e.do("POST", "/api/v1/reviews/"+rq.ID+"/approve", map[string]any{"by": "bo"}).want(t, 200).json(t, &rv)
	e.do("GET", live, nil).want(t, 200).json(t, &l)
	if rv.Status != evolve.ReviewApproved || l.Live.Version != next.Metadata.Version || l.Live.Action != evolve.MoveApprove || l.Live.By != "bo" {
		t.Fatalf("approved %+v, live %+v", rv, l.Live)
	}
}
