package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/temporal"
	"github.com/sextant-dev/sextant/sdk"
)

// holder is an OpenAI-compatible provider that holds every request until
// the test answers its prompt (answer); held says which prompts arrived.
type holder struct {
	held    chan string
	closing chan struct{}
	mu      sync.Mutex
	answers map[string]chan string
}

func (h *holder) answer(prompt string) chan string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.answers[prompt] == nil {
		h.answers[prompt] = make(chan string)
	}
	return h.answers[prompt]
}

func (h *holder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	prompt := req.Messages[len(req.Messages)-1].Content
	h.held <- prompt
	select {
	case reply := <-h.answer(prompt):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, reply)
	case <-r.Context().Done():
	case <-h.closing:
	}
}

// recv waits for want on ch, skipping others (the test's deadline bounds
// the wait: a hang is a failure, reported before go test kills it).
func recv(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	d, ok := t.Deadline()
	if !ok {
		d = time.Now().Add(5 * time.Minute)
	}
	timeout := time.After(time.Until(d) - 10*time.Second)
	for {
		select {
		case got := <-ch:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("waited in vain for %q", want)
		}
	}
}

// TestCancel cancels runs on Temporal as sextant cancel cancels local
// ones: a run waiting for a person ends at once; a run whose LLM step is
// in flight (its provider holds the request) stops, the step's context
// ending before the run is recorded and nothing of the step recorded,
// with steps as activities and as local activities. Each task lands in the
// store cancelled with who and why, the workflow closes cancelled, a
// follower gets the cancelled result; a cancel that names nobody,
// cancelling again, resuming, and cancelling a run that completed are
// refused as invalid input.
func TestCancel(t *testing.T) {
	h := &holder{held: make(chan string, 16), closing: make(chan struct{}), answers: map[string]chan string{}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer close(h.closing) // the abandoned calls' handlers return first
	t.Setenv("SEXTANT_TEST_HOLD_URL", srv.URL+"/v1")
	t.Setenv("SEXTANT_TEST_OPENAI_KEY", "sk-test")
	const waitFile, heldFile = "testdata/restart/pipeline.toml", "testdata/cancel/pipeline.toml"
	ctx := context.Background()
	cl := startCluster(t, nil, 0, waitFile, heldFile)
	// stopped gets a step's task once the step's context ended.
	stopped := make(chan string, 16)
	for range 2 {
		cl.addWorker(t, temporal.WorkerOptions{OnStep: func(ctx context.Context, task, _ string) {
			go func() { <-ctx.Done(); stopped <- task }()
		}}, waitFile, heldFile)
	}
	by := run.Cancelled{By: "ops@example", Reason: "no longer needed"}
	const want = "cancelled by ops@example: no longer needed"

	// cancelled checks what a cancelled task left: its result, its record
	// in the store, the workflow's status.
	cancelled := func(t *testing.T, task string, res *run.Result, trace string) {
		t.Helper()
		if res.Status != store.StatusCancelled || res.Error != want {
			t.Fatalf("result %s %q, want cancelled %q", res.Status, res.Error, want)
		}
		tree, err := cl.st.Tree(ctx, task)
		must(t, err)
		tk := tree.Task
		if tk.Status != store.StatusCancelled || tk.Cancelled == nil || tk.Cancelled.By != by.By || tk.Cancelled.Reason != by.Reason || tk.Cancelled.At.IsZero() {
			t.Fatalf("stored task %s, cancelled %+v", tk.Status, tk.Cancelled)
		}
		if len(tk.Waits) != 0 {
			t.Errorf("a cancelled task still waits for %v", tk.Waits)
		}
		ex := tree.Executions[0].Execution
		if ex.Status != store.StatusCancelled || ex.Error != want || fmt.Sprint(ex.Trace) != trace {
			t.Errorf("execution %s %q trace %v, want cancelled %q %s", ex.Status, ex.Error, ex.Trace, want, trace)
		}
		if n := len(tree.Recordings); n != 0 {
			t.Errorf("%d recordings: a call abandoned by the cancel was recorded", n)
		}
		d, err := cl.c.DescribeWorkflowExecution(ctx, task, "")
		must(t, err)
		if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
			t.Errorf("workflow %s, want canceled", st)
		}
		if res, err := temporal.Follow(ctx, cl.c, task, temporal.UntilWait); err != nil || res.Status != store.StatusCancelled {
			t.Errorf("follow after the cancel: %v %+v", err, res)
		}
		_, err = temporal.Cancel(ctx, cl.c, task, by)
		if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "nothing to cancel") {
			t.Errorf("second cancel: %v, want invalid: nothing to cancel", err)
		}
	}

	t.Run("waiting", func(t *testing.T) {
		cl.start(t, "wait-twice", "c-wait", nil)
		res, err := temporal.Follow(ctx, cl.c, "c-wait", temporal.UntilWait)
		must(t, err)
		if res.Status != store.StatusWaiting || len(res.Waiting) != 1 {
			t.Fatalf("before the cancel: %+v", res)
		}
		if _, err := temporal.Cancel(ctx, cl.c, "c-wait", run.Cancelled{Reason: "nobody"}); !errors.Is(err, sdk.ErrInvalid) {
			t.Fatalf("a cancel that names nobody: %v, want invalid", err)
		}
		res, err = temporal.Cancel(ctx, cl.c, "c-wait", by)
		must(t, err)
		cancelled(t, "c-wait", res, "[]")
		if err := temporal.Resume(ctx, cl.c, "c-wait", map[string]any{"answer": "yes"}); !errors.Is(err, sdk.ErrInvalid) {
			t.Errorf("resume after the cancel: %v, want invalid", err)
		}
	})

	for _, local := range []bool{false, true} {
		name := "in-flight"
		if local {
			name += "-local-steps"
		}
		t.Run(name, func(t *testing.T) {
			task := "c-" + name
			cl.startWith(t, temporal.RunInput{Pipeline: "held", Task: task, Input: map[string]any{"topic": task}, LocalSteps: local})
			recv(t, h.held, "hold "+task)
			// A follower waiting on the run gets the cancelled result.
			followed := make(chan *run.Result, 1)
			go func() {
				res, err := temporal.Follow(ctx, cl.c, task, temporal.UntilWait)
				if err != nil {
					t.Error(err)
				}
				followed <- res
			}()
			res, err := temporal.Cancel(ctx, cl.c, task, by)
			must(t, err)
			recv(t, stopped, task)
			cancelled(t, task, res, "[step s1]")
			if res := <-followed; res == nil || res.Status != store.StatusCancelled {
				t.Errorf("follower got %+v, want the cancelled result", res)
			}
			if local {
				return
			}
			// The step activity stopped as cancelled before the run was
			// recorded: its cancellation is in the history.
			it := cl.c.GetWorkflowHistory(ctx, task, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			n := 0
			for it.HasNext() {
				ev, err := it.Next()
				must(t, err)
				if ev.GetActivityTaskCanceledEventAttributes() != nil {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d activities cancelled in the history, want the step's", n)
			}
		})
	}

	t.Run("completed", func(t *testing.T) {
		cl.start(t, "held", "c-done", map[string]any{"topic": "c-done"})
		recv(t, h.held, "hold c-done")
		h.answer("hold c-done") <- "done"
		res, err := temporal.Result(ctx, cl.c, "c-done")
		must(t, err)
		if res.Status != store.StatusCompleted {
			t.Fatalf("%+v", res)
		}
		if _, err := temporal.Cancel(ctx, cl.c, "c-done", by); !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "nothing to cancel") {
			t.Errorf("cancel of a completed run: %v, want invalid: nothing to cancel", err)
		}
	})
}

// TestHeldWithoutWorker: with no worker polling, a message (DeliverHeld)
// and a cancel (CancelHeld) are taken by Temporal at once, which keeps
// them; once a worker polls again, the run waiting for the message takes
// it, and the cancelled run is recorded cancelled by whom the cancel
// named. A run that ended, or none, refuses both as invalid input.
func TestHeldWithoutWorker(t *testing.T) {
	const events, wait = "testdata/events/pipeline.toml", "testdata/restart/pipeline.toml"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := startCluster(t, nil, 0, events, wait)
	w := cl.addWorker(t, temporal.WorkerOptions{}, events, wait)
	cl.start(t, "events", "held-msg", nil)
	res, err := temporal.Follow(ctx, cl.c, "held-msg", temporal.UntilEvent)
	must(t, err)
	if len(res.Waits) != 1 || res.Waits[0].Name != "approved" {
		t.Fatalf("before the message: %+v", res)
	}
	cl.start(t, "wait-twice", "held-cancel", nil)
	if res, err = temporal.Follow(ctx, cl.c, "held-cancel", temporal.UntilPerson); err != nil || len(res.Waiting) != 1 {
		t.Fatalf("before the cancel: %+v %v", res, err)
	}
	w.Stop()

	msg := run.Delivery{Kind: store.WaitMessage, Name: "approved", Vars: map[string]any{"who": "bob"}}
	must(t, temporal.DeliverHeld(ctx, cl.c, "held-msg", msg))
	by := run.Cancelled{By: "ann", Reason: "deploy"}
	must(t, temporal.CancelHeld(ctx, cl.c, "held-cancel", by))
	if err := temporal.DeliverHeld(ctx, cl.c, "no-such-task", msg); !errors.Is(err, store.ErrNotFound) || !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("a message to no run: %v, want not found", err)
	}

	cl.addWorker(t, temporal.WorkerOptions{}, events, wait)
	// The first follow may be answered in the workflow task that takes
	// the message, before the run does: a few suffice, none when the
	// message was lost.
	for try := 0; len(res.Waits) != 1 || res.Waits[0].Kind != store.WaitSignal; try++ {
		if try == 5 {
			t.Fatalf("the held message never reached the run: %+v", res)
		}
		res, err = temporal.Follow(ctx, cl.c, "held-msg", temporal.UntilEvent)
		must(t, err)
	}
	if got, err := temporal.Broadcast(ctx, cl.c, "events", "go", nil, 0); err != nil || len(got) != 1 {
		t.Fatalf("broadcast after the held message: %v %v", got, err)
	}
	if res, err = temporal.Result(ctx, cl.c, "held-msg"); err != nil || fmt.Sprint(res.Output["after"]) != "map[seen:bob]" {
		t.Fatalf("the run that took the held message: %+v %v", res, err)
	}

	res, err = temporal.Result(ctx, cl.c, "held-cancel")
	must(t, err)
	task, err := cl.st.Task(ctx, "held-cancel")
	must(t, err)
	if res.Status != store.StatusCancelled || task.Status != store.StatusCancelled || !strings.Contains(res.Error, "ann") || !strings.Contains(res.Error, "deploy") {
		t.Fatalf("the run cancelled without a worker: %+v, stored %+v", res, task)
	}
	for _, err := range []error{temporal.CancelHeld(ctx, cl.c, "held-cancel", by), temporal.DeliverHeld(ctx, cl.c, "held-msg", msg)} {
		if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "has ended") {
			t.Errorf("to a run that ended: %v, want invalid input", err)
		}
	}
}
