package run_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

var t0 = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), t.TempDir(), store.NewConfig().WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func waitsText(ws []store.Wait) string {
	var parts []string
	for _, w := range ws {
		parts = append(parts, w.String())
	}
	return strings.Join(parts, "; ")
}

func countSteps(trace []string, step string) int {
	n := 0
	for _, s := range trace {
		if s == "step "+step {
			n++
		}
	}
	return n
}

// TestEventsLive walks a routine through a timer, a message and a signal
// catch event with a fake clock: each wait is checkpointed with what it
// waits for, a resume before the due time fires nothing and keeps the due
// time, and deliveries nobody waits for are refused naming what the task
// waits for.
func TestEventsLive(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/events/pipeline.toml")
	st := openStore(t)
	clock := &fakeClock{now: t0}
	r := prep.Runner(run.Config{Store: st, Clock: clock.Now})
	res, err := r.Start(ctx, run.Input{ID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	want := "timer pause at pause due 2026-01-01T09:00:02Z"
	if res.Status != store.StatusWaiting || waitsText(res.Waits) != want {
		t.Fatalf("start: %s waits %q, want waiting %q (error %q)", res.Status, waitsText(res.Waits), want, res.Error)
	}
	task, err := st.Task(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != store.StatusWaiting || waitsText(task.Waits) != want {
		t.Fatalf("stored task: %s waits %q, want waiting %q", task.Status, waitsText(task.Waits), want)
	}

	// Not due yet: a fresh runner (another process) fires nothing.
	clock.Advance(1999 * time.Millisecond)
	r = prep.Runner(run.Config{Store: st, Clock: clock.Now})
	if res, err = r.Resume(ctx, "t1", nil); err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusWaiting || waitsText(res.Waits) != want {
		t.Fatalf("early resume: %s waits %q, want waiting %q", res.Status, waitsText(res.Waits), want)
	}

	// A message the task does not wait for (yet) is refused, nothing written.
	_, err = r.Deliver(ctx, "t1", run.Delivery{Kind: store.WaitMessage, Name: "approved"})
	if !errors.Is(err, run.ErrNoWaiter) || !strings.Contains(err.Error(), "it waits for: "+want) {
		t.Fatalf("early message: err %v, want ErrNoWaiter naming %q", err, want)
	}

	clock.Advance(time.Millisecond)
	if res, err = r.Resume(ctx, "t1", nil); err != nil {
		t.Fatal(err)
	}
	want = `message "approved" (correlation t1) at approval`
	if res.Status != store.StatusWaiting || waitsText(res.Waits) != want {
		t.Fatalf("due resume: %s waits %q, want waiting %q", res.Status, waitsText(res.Waits), want)
	}
	_, err = r.Deliver(ctx, "t1", run.Delivery{Kind: store.WaitMessage, Name: "aproved"})
	if !errors.Is(err, run.ErrNoWaiter) || !strings.Contains(err.Error(), `message "aproved"`) || !strings.Contains(err.Error(), want) {
		t.Fatalf("wrong message: err %v", err)
	}
	if res, err = r.Deliver(ctx, "t1", run.Delivery{Kind: store.WaitMessage, Name: "approved", Vars: map[string]any{"who": "ann"}}); err != nil {
		t.Fatal(err)
	}
	want = `signal "go" at gate`
	if res.Status != store.StatusWaiting || waitsText(res.Waits) != want {
		t.Fatalf("after message: %s waits %q, want waiting %q", res.Status, waitsText(res.Waits), want)
	}
	if res, err = r.Deliver(ctx, "t1", run.Delivery{Kind: store.WaitSignal, Name: "go"}); err != nil {
		t.Fatal(err)
	}
	after, _ := res.Output["after"].(map[string]any)
	if res.Status != store.StatusCompleted || after["seen"] != "ann" || res.Steps != 2 {
		t.Fatalf("end: %s steps %d after %v, want completed, 2 steps, after.seen ann (error %q)", res.Status, res.Steps, res.Output["after"], res.Error)
	}
	task, err = st.Task(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != store.StatusCompleted || len(task.Waits) != 0 {
		t.Fatalf("stored task after the end: %s waits %v", task.Status, task.Waits)
	}
	// Each delivery is recorded as an answer for replay.
	for _, ev := range []string{"pause", "approval", "gate"} {
		if _, err := st.Recording(ctx, store.HumanKey("t1", "event "+ev, 1)); err != nil {
			t.Errorf("delivery at %s not recorded: %v", ev, err)
		}
	}
}

// TestRetryDelayDurable: a DAG step that fails waits retry_delay, doubled
// each retry, checkpointed as waiting; a resume before the due time (a
// restarted process) neither runs the attempt nor restarts the delay.
func TestRetryDelayDurable(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/events/retry.toml")
	st := openStore(t)
	clock := &fakeClock{now: t0}
	r := prep.Runner(run.Config{Store: st, Clock: clock.Now})
	res, err := r.Start(ctx, run.Input{ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	want := "retry 1 of flaky due 2026-01-01T09:00:03Z"
	if res.Status != store.StatusWaiting || waitsText(res.Waits) != want || res.Steps != 1 {
		t.Fatalf("start: %s after %d steps waits %q, want waiting after 1 step %q (error %q)", res.Status, res.Steps, waitsText(res.Waits), want, res.Error)
	}
	clock.Advance(2 * time.Second)
	if res, err = prep.Runner(run.Config{Store: st, Clock: clock.Now}).Resume(ctx, "r1", nil); err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusWaiting || waitsText(res.Waits) != want || res.Steps != 1 {
		t.Fatalf("early resume: %s after %d steps waits %q, want %q after 1 step", res.Status, res.Steps, waitsText(res.Waits), want)
	}
	clock.Advance(time.Second)
	if res, err = prep.Runner(run.Config{Store: st, Clock: clock.Now}).Resume(ctx, "r1", nil); err != nil {
		t.Fatal(err)
	}
	want = "retry 2 of flaky due 2026-01-01T09:00:09Z" // 3 s, then 6 s
	if res.Status != store.StatusWaiting || waitsText(res.Waits) != want || res.Steps != 2 {
		t.Fatalf("second attempt: %s after %d steps waits %q, want %q after 2 steps", res.Status, res.Steps, waitsText(res.Waits), want)
	}
	clock.Advance(6 * time.Second)
	if res, err = prep.Runner(run.Config{Store: st, Clock: clock.Now}).Resume(ctx, "r1", nil); err != nil {
		t.Fatal(err)
	}
	if res.Status == store.StatusWaiting || res.Steps != 4 {
		t.Fatalf("end: %s after %d steps, want ended after 3 attempts and after (error %q)", res.Status, res.Steps, res.Error)
	}
}

// TestRunSleeps: with Config.Sleep a run waiting only for timers and
// retries sleeps until the next is due, and says how long it slept.
func TestRunSleeps(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/events/retry.toml")
	st := openStore(t)
	clock := &fakeClock{now: t0}
	var slept []time.Duration
	sleep := func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		clock.Advance(d)
		return nil
	}
	res, err := prep.Runner(run.Config{Store: st, Clock: clock.Now, Sleep: sleep}).Start(ctx, run.Input{ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status == store.StatusWaiting || res.Steps != 4 || len(slept) != 2 || slept[0] != 3*time.Second || slept[1] != 6*time.Second {
		t.Fatalf("got %s after %d steps, slept %v; want ended after 4 steps, slept [3s 6s] (error %q)", res.Status, res.Steps, slept, res.Error)
	}
	tree, err := st.Tree(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if n := countSteps(tree.Executions[0].Execution.Trace, "flaky"); n != 3 {
		t.Errorf("flaky ran %d times, want 3: %v", n, tree.Executions[0].Execution.Trace)
	}
}

// TestSleepStopsAtMessage: a run that waits for a message returns
// waiting even when it may sleep: nothing in this process can deliver it.
func TestSleepStopsAtMessage(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/events/pipeline.toml")
	st := openStore(t)
	clock := &fakeClock{now: t0}
	sleep := func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil }
	res, err := prep.Runner(run.Config{Store: st, Clock: clock.Now, Sleep: sleep}).Start(ctx, run.Input{ID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `message "approved" (correlation t1) at approval`; res.Status != store.StatusWaiting || waitsText(res.Waits) != want {
		t.Fatalf("got %s waits %q, want waiting %q (error %q)", res.Status, waitsText(res.Waits), want, res.Error)
	}
}

// blockingModel answers only when its context ends (a call that hangs).
type blockingModel struct{}

func (blockingModel) Describe() sdk.Info {
	return sdk.Info{Name: "blocking", Kind: sdk.KindProvider, Version: "0.0.1", API: sdk.APIVersion}
}

func (blockingModel) Chat(ctx context.Context, _ *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestBoundaryTimers: timer boundary events on steps, live.
func TestBoundaryTimers(t *testing.T) {
	ctx := context.Background()
	t.Run("interrupting on a waiting human step", func(t *testing.T) {
		prep := prepare(t, "testdata/events/boundary-human.toml")
		st := openStore(t)
		clock := &fakeClock{now: t0}
		r := prep.Runner(run.Config{Store: st, Clock: clock.Now})
		res, err := r.Start(ctx, run.Input{ID: "h1"})
		if err != nil {
			t.Fatal(err)
		}
		want := "answer at ask: ok? — resume with --set answer=…; timer late at ask due 2026-01-01T10:00:00Z"
		if res.Status != store.StatusWaiting || waitsText(res.Waits) != want {
			t.Fatalf("start: %s waits %q, want %q (error %q)", res.Status, waitsText(res.Waits), want, res.Error)
		}
		clock.Advance(time.Hour)
		if res, err = r.Resume(ctx, "h1", nil); err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusCompleted || res.Output["escalate"] == nil || res.Output["after"] != nil || res.Confirmations != 0 {
			t.Fatalf("after the timer: %s output %v, want completed through escalate only (error %q)", res.Status, res.Output, res.Error)
		}
	})
	t.Run("interrupting cancels a running llm step", func(t *testing.T) {
		prep := prepare(t, "testdata/events/boundary-llm.toml")
		st := openStore(t)
		clock := &fakeClock{now: t0}
		// The model never answers: the 50 ms timer always wins, however
		// slow the machine.
		r := run.NewRunner(run.Config{Pipeline: prep.Pipeline, Navigator: prep.Navigator, Routine: prep.Routine,
			Strategy: prep.Strategy, Prices: prep.Prices, Store: st, Clock: clock.Now,
			Providers: run.NewProviders(nil, &run.Provider{Name: "default", Plugin: blockingModel{}})})
		res, err := r.Start(ctx, run.Input{ID: "l1"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusCompleted || res.Output["escalate"] == nil || res.Output["after"] != nil {
			t.Fatalf("got %s output %v, want completed through escalate only (error %q)", res.Status, res.Output, res.Error)
		}
		tree, err := st.Tree(ctx, "l1")
		if err != nil {
			t.Fatal(err)
		}
		if tr := tree.Executions[0].Execution.Trace; countSteps(tr, "ask") != 0 || countSteps(tr, "escalate") != 1 {
			t.Errorf("trace %v, want escalate and no ask", tr)
		}
	})
	t.Run("non-interrupting starts the other path", func(t *testing.T) {
		prep := prepare(t, "testdata/events/boundary-llmnon.toml")
		st := openStore(t)
		clock := &fakeClock{now: t0}
		r := run.NewRunner(run.Config{Pipeline: prep.Pipeline, Navigator: prep.Navigator, Routine: prep.Routine,
			Strategy: prep.Strategy, Prices: prep.Prices, Store: st, Clock: clock.Now,
			Providers: run.NewProviders(nil, &run.Provider{Name: "default", Plugin: slowModel{clock: clock, takes: 2 * time.Minute}})})
		res, err := r.Start(ctx, run.Input{ID: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusCompleted || res.Output["escalate"] == nil || res.Output["after"] == nil {
			t.Fatalf("got %s output %v, want completed through both paths (error %q)", res.Status, res.Output, res.Error)
		}
	})
	t.Run("non-interrupting not due stays quiet", func(t *testing.T) {
		prep := prepare(t, "testdata/events/boundary-llmnon.toml")
		st := openStore(t)
		clock := &fakeClock{now: t0}
		r := run.NewRunner(run.Config{Pipeline: prep.Pipeline, Navigator: prep.Navigator, Routine: prep.Routine,
			Strategy: prep.Strategy, Prices: prep.Prices, Store: st, Clock: clock.Now,
			Providers: run.NewProviders(nil, &run.Provider{Name: "default", Plugin: slowModel{clock: clock, takes: 30 * time.Second}})})
		res, err := r.Start(ctx, run.Input{ID: "n2"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusCompleted || res.Output["escalate"] != nil || res.Output["after"] == nil {
			t.Fatalf("got %s output %v, want completed through after only (error %q)", res.Status, res.Output, res.Error)
		}
	})
}

// TestTimerExpression: a FEEL timer expression is evaluated by the
// navigator when the token arrives, and its value schedules the wait.
func TestTimerExpression(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/events/exprtimer.toml")
	for _, tt := range []struct {
		delay any
		want  string
	}{
		{"PT5S", "timer pause at pause due 2026-01-01T09:00:05Z"},
		{"P1D", "timer pause at pause due 2026-01-02T09:00:00Z"},
		{"soon", `timer pause at pause: timeDuration "soon": not an ISO 8601 duration`},
	} {
		t.Run(fmt.Sprint(tt.delay), func(t *testing.T) {
			st := openStore(t)
			clock := &fakeClock{now: t0}
			res, err := prep.Runner(run.Config{Store: st, Clock: clock.Now}).Start(ctx, run.Input{ID: "x1", Input: map[string]any{"delay": tt.delay}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != store.StatusWaiting || !strings.HasPrefix(waitsText(res.Waits), tt.want) {
				t.Fatalf("got %s waits %q, want waiting %q (error %q)", res.Status, waitsText(res.Waits), tt.want, res.Error)
			}
		})
	}
}
