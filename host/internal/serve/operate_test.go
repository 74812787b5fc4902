package serve_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// operateAPI drives the operator's routes (TestAPI calls it): vars on a
// waiting task, cancel with who and why, and what is refused — a second
// cancel, changes to an ended task (409), an unknown task (404).
func operateAPI(t *testing.T, e *env) {
	t.Helper()
	input := readJSON(t, filepath.Join(e.pipelines, "email-triage", "inputs", "invoice.json"))
	var r runResult
	e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "email-triage", "id": "op-1", "input": input}).want(t, 200).json(t, &r)
	if r.Status != "waiting" {
		t.Fatalf("op-1 run: %+v", r)
	}
	e.do("POST", "/api/v1/tasks/op-1/vars", map[string]any{"vars": map[string]any{"note": "checked"}}).want(t, 200).json(t, &r)
	if r.Status != "waiting" {
		t.Fatalf("vars on a waiting task: %+v", r)
	}
	if code := e.do("POST", "/api/v1/tasks/op-1/vars", map[string]any{}).want(t, 400).errorCode(t); code != "bad_request" {
		t.Fatalf("vars without vars: %s", code)
	}
	if code := e.do("POST", "/api/v1/tasks/op-1/retry", map[string]any{}).want(t, 409).errorCode(t); code != "conflict" {
		t.Fatalf("retry of a task in no incident: %s", code)
	}
	var c struct{ Task, Status, Error string }
	e.do("POST", "/api/v1/tasks/op-1/cancel", map[string]any{"reason": "stale"}).want(t, 200).json(t, &c)
	if c.Status != "cancelled" || !strings.HasPrefix(c.Error, "cancelled by api@127.0.0.1: stale") {
		t.Fatalf("cancel: %+v", c)
	}
	tk, err := e.store.Task(context.Background(), "op-1")
	if err != nil || tk.Status != store.StatusCancelled || tk.Cancelled == nil || tk.Cancelled.Reason != "stale" || tk.Waits != nil {
		t.Fatalf("cancelled task: %v %+v", err, tk)
	}
	for _, p := range []string{"cancel", "vars", "retry"} {
		body := map[string]any{"vars": map[string]any{"x": 1}}
		if p == "cancel" {
			body = map[string]any{"by": "bob@ops"}
		}
		ans := e.do("POST", "/api/v1/tasks/op-1/"+p, body).want(t, 409)
		if !strings.Contains(string(ans.body), "op-1") {
			t.Fatalf("%s of a cancelled task: %s", p, ans.body)
		}
	}
	e.do("POST", "/api/v1/tasks/nope/cancel", map[string]any{}).want(t, 404)
}
