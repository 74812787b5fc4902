package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestWriteResult: a waiting run names the command that answers each
// question, its choices quoted for a shell, with the store flag the
// caller needs, then its other waits and the next timer due.
func TestWriteResult(t *testing.T) {
	due := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	res := &run.Result{Task: "t 1", Status: store.StatusWaiting, Steps: 2, Tokens: 30, CostUSD: 0.0012,
		Waiting: []run.Question{{Node: "ok", Question: "ship it? — resume with --set confirm=yes|no|later"}, {Node: "why", Question: "why"}},
		Waits:   []store.Wait{{Kind: store.WaitHuman, Node: "ok"}, {Kind: store.WaitTimer, Event: "t", Node: "ok", Due: due.Add(time.Hour)}, {Kind: store.WaitTimer, Event: "u", Node: "ok", Due: due}}}
	var b bytes.Buffer
	WriteResult(&b, res, " --store 'my store'")
	want := `task t 1 waiting after 2 steps (30 tokens, $0.0012)
waiting at ok: ship it?
  continue: sextant resume 't 1' --set confirm=yes --store 'my store'   (or confirm=no, confirm=later)
waiting at why: why
  continue: sextant resume 't 1' --set answer=… --store 'my store'
waiting for timer t at ok due 2026-01-02T04:04:05Z
waiting for timer u at ok due 2026-01-02T03:04:05Z
next timer due 2026-01-02T03:04:05Z (sextant resume TASK fires it then)
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	WriteResult(&b, &run.Result{Task: "t2", Status: store.StatusCompleted, Steps: 1, Output: map[string]any{"a": 1}}, "")
	if want := "task t2 completed after 1 steps (0 tokens, $0.0000)\noutput: {\"a\":1}\n"; b.String() != want {
		t.Errorf("completed: got %q, want %q", b.String(), want)
	}
}

func TestWriteSignal(t *testing.T) {
	var b bytes.Buffer
	WriteSignal(&b, "go", []*run.Result{{Task: "a", Status: store.StatusRunning}, {Task: "b", Status: store.StatusCompleted, Steps: 3}})
	want := `signal "go" received by 2 task(s)
task a running (in the process that holds the store)
task b completed after 3 steps
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestOperated: what runs, show and incidents say of a task an operator
// must act on.
func TestOperated(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	inc := &store.Incident{Kind: "condition", Node: "gw", Position: "p.bpmn:7", Error: "not a boolean"}
	for _, tt := range []struct {
		task         store.Task
		detail, show string
	}{
		{store.Task{ID: "i 1", Status: store.StatusInterrupted, Owner: &store.Lease{PID: 7, Host: "box", Started: at}}, "owner pid 7 on box (since 2026-01-02T03:04:05Z) is gone: sextant resume 'i 1'", "interrupted: owner pid 7 on box (since 2026-01-02T03:04:05Z) is gone\n  continue: sextant resume 'i 1'\n"},
		{store.Task{ID: "c", Status: store.StatusCancelled, Cancelled: &store.Cancellation{By: "ann@box", Reason: "stale", At: at}}, "cancelled by ann@box: stale", "cancelled by ann@box: stale at 2026-01-02T03:04:05Z\n"},
		{store.Task{ID: "w", Status: store.StatusWaiting, Waits: []store.Wait{{Kind: store.WaitSignal, Name: "go", Event: "e"}}}, `signal "go" at e`, ""},
	} {
		if got := TaskDetail(&tt.task); got != tt.detail {
			t.Errorf("%s: detail %q, want %q", tt.task.ID, got, tt.detail)
		}
		var b bytes.Buffer
		WriteOperated(&b, &tt.task)
		if b.String() != tt.show {
			t.Errorf("%s: show %q, want %q", tt.task.ID, b.String(), tt.show)
		}
	}
	var b bytes.Buffer
	if err := WriteIncidents(&b, []store.Task{{ID: "x", Pipeline: "p", Incident: inc}, {ID: "y", Pipeline: "p"}}); err != nil {
		t.Fatal(err)
	}
	want := "TASK  PIPELINE  KIND       WHERE        ERROR\nx     p         condition  p.bpmn:7 gw  not a boolean\ny     p                                 \n"
	if b.String() != want {
		t.Errorf("incidents: got %q, want %q", b.String(), want)
	}
}
