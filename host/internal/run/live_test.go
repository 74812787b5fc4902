package run_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// TestConditionClock: today() and now() in a BPMN condition read the
// run's clock (the fake one here, the recorded one in replay), not the
// wall clock.
func TestConditionClock(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/live/today.toml")
	st := openStore(t)
	clock := &fakeClock{now: t0}
	res, err := prep.Runner(run.Config{Store: st, Clock: clock.Now}).Start(ctx, run.Input{ID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusCompleted || res.Output["yes"] == nil || res.Output["no"] != nil {
		t.Fatalf("got %s output %v, want completed through yes (error %q)", res.Status, res.Output, res.Error)
	}
}

// TestInboxDeliveries: a run that may sleep and has an inbox (`run
// --wait`) waits for its message and signal in the foreground instead of
// returning waiting, and takes them from the inbox; a delivery it does
// not wait for (yet) is answered with ErrNoWaiter and changes nothing.
func TestInboxDeliveries(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/events/pipeline.toml")
	st := openStore(t)
	clock := &fakeClock{now: t0}
	sleep := func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil }
	inbox := make(chan run.Inbound)
	type ended struct {
		res *run.Result
		err error
	}
	end := make(chan ended, 1)
	go func() {
		res, err := prep.Runner(run.Config{Store: st, Clock: clock.Now, Sleep: sleep, Inbox: inbox}).Start(ctx, run.Input{ID: "t1"})
		end <- ended{res, err}
	}()
	// send delivers d, trying again while the run does not wait for it
	// yet (it is still running its step or waiting for its timer).
	send := func(d run.Delivery) {
		t.Helper()
		for range 100000 {
			done := make(chan error, 1)
			select {
			case inbox <- run.Inbound{Delivery: d, Done: done}:
			case e := <-end:
				t.Fatalf("run ended before %s %q: %+v %v", d.Kind, d.Name, e.res, e.err)
			}
			err := <-done
			if errors.Is(err, run.ErrNoWaiter) {
				continue
			}
			if err != nil {
				t.Fatalf("%s %q: %v", d.Kind, d.Name, err)
			}
			return
		}
		t.Fatalf("%s %q: never taken", d.Kind, d.Name)
	}
	send(run.Delivery{Kind: store.WaitMessage, Name: "approved", Vars: map[string]any{"who": "ann"}})
	send(run.Delivery{Kind: store.WaitSignal, Name: "go"})
	e := <-end
	if e.err != nil {
		t.Fatal(e.err)
	}
	after, _ := e.res.Output["after"].(map[string]any)
	if e.res.Status != store.StatusCompleted || after["seen"] != "ann" {
		t.Fatalf("got %s output %v, want completed with after.seen ann (error %q)", e.res.Status, e.res.Output, e.res.Error)
	}
	if got := clock.Now(); !got.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("clock at %s, want the timer's 2 s slept", got)
	}
}

// TestCorrelationKey: a message's zeebe:subscription correlationKey is
// evaluated when the token starts waiting; only a delivery with that key
// (or none, by task) reaches it, and a key that is not a string or a
// number stops the run in an incident that says why (a delivery is then
// refused, naming sextant retry).
func TestCorrelationKey(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/live/keyed.toml")
	for _, tt := range []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"string", map[string]any{"orderId": "o-42"}, `message "paid" (correlation o-42) at payment`},
		{"number", map[string]any{"orderId": 42}, `message "paid" (correlation 42) at payment`},
		{"null", nil, `keyed.bpmn:9: payment: correlationKey "=input.orderId": gave null, want a string or a number`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t)
			r := prep.Runner(run.Config{Store: st, Clock: (&fakeClock{now: t0}).Now})
			res, err := r.Start(ctx, run.Input{ID: "k1", Input: tt.input})
			if err != nil {
				t.Fatal(err)
			}
			if tt.input == nil {
				if res.Status != store.StatusIncident || res.Error != tt.want || res.Incident == nil || res.Incident.Kind != run.IncidentCorrelation {
					t.Fatalf("got %s %q %+v, want an incident %q", res.Status, res.Error, res.Incident, tt.want)
				}
				_, err := r.Deliver(ctx, "k1", run.Delivery{Kind: store.WaitMessage, Name: "paid"})
				if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "sextant retry k1") {
					t.Fatalf("a message to a task in an incident: %v, want it refused, naming retry", err)
				}
				return
			}
			if res.Status != store.StatusWaiting || waitsText(res.Waits) != tt.want {
				t.Fatalf("got %s waits %q, want %q (error %q)", res.Status, waitsText(res.Waits), tt.want, res.Error)
			}
			key := res.Waits[0].Correlation
			_, err = r.Deliver(ctx, "k1", run.Delivery{Kind: store.WaitMessage, Name: "paid", Key: key + "x"})
			if !errors.Is(err, run.ErrNoWaiter) || !strings.Contains(err.Error(), `with correlation key "`+key+`x"`) {
				t.Fatalf("wrong key: %v, want ErrNoWaiter naming the key", err)
			}
			res, err = r.Deliver(ctx, "k1", run.Delivery{Kind: store.WaitMessage, Name: "paid", Key: key, Vars: map[string]any{"amount": 12.5}})
			if err != nil {
				t.Fatal(err)
			}
			after, _ := res.Output["after"].(map[string]any)
			if res.Status != store.StatusCompleted || after["paid"] != 12.5 {
				t.Fatalf("got %s output %v, want completed with after.paid 12.5 (error %q)", res.Status, res.Output, res.Error)
			}
		})
	}
}

// TestTimerCycle: a non-interrupting cycle timer on a waiting step fires
// once per interval, durably (each resume, in a fresh runner, counts from
// the recorded due time, not from now): R3 three times, R forever; the
// FEEL cycle() function writes the cycle.
func TestTimerCycle(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/live/cycle.toml")
	for _, tt := range []struct {
		name   string
		input  map[string]any
		fires  int // how often it fires before it stops (0: never stops)
		nudges int // the nudge steps run in all
	}{
		{"R3", map[string]any{"reps": 3}, 3, 3},
		{"R", nil, 0, 6}, // the sixth is due by the time of the answer
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t)
			clock := &fakeClock{now: t0}
			res, err := prep.Runner(run.Config{Store: st, Clock: clock.Now}).Start(ctx, run.Input{ID: "c1", Input: tt.input})
			if err != nil {
				t.Fatal(err)
			}
			want := "answer at ask: ok? — resume with --set answer=…; timer remind at ask due 2026-01-01T09:10:00Z"
			if waitsText(res.Waits) != want {
				t.Fatalf("start: waits %q, want %q (error %q)", waitsText(res.Waits), want, res.Error)
			}
			// Resumed 5 min after each due time: the next is still due
			// 10 min after the recorded one.
			clock.Advance(15 * time.Minute)
			for i := 1; i <= 5; i++ {
				if res, err = prep.Runner(run.Config{Store: st, Clock: clock.Now}).Resume(ctx, "c1", nil); err != nil {
					t.Fatal(err)
				}
				want := "answer at ask: ok? — resume with --set answer=…"
				if tt.fires == 0 || i < tt.fires {
					want += "; timer remind at ask due " + t0.Add(time.Duration(i+1)*10*time.Minute).Format(time.RFC3339) + fmt.Sprintf(" (fired %d)", i)
				}
				if waitsText(res.Waits) != want {
					t.Fatalf("resume %d: waits %q, want %q (error %q)", i, waitsText(res.Waits), want, res.Error)
				}
				clock.Advance(10 * time.Minute)
			}
			res, err = prep.Runner(run.Config{Store: st, Clock: clock.Now}).Resume(ctx, "c1", map[string]any{"answer": "yes"})
			if err != nil {
				t.Fatal(err)
			}
			tree, err := st.Tree(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			if n := countSteps(tree.Executions[0].Execution.Trace, "nudge"); res.Status != store.StatusCompleted || n != tt.nudges {
				t.Fatalf("got %s with %d nudges, want completed with %d (error %q)", res.Status, n, tt.nudges, res.Error)
			}
		})
	}
}

// TestConditionalEvent: a conditional catch event fires when its FEEL
// condition holds, evaluated as the variables change (here once the
// parallel step has run); while it does not hold, the run waits for it.
func TestConditionalEvent(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/live/conditional.toml")
	for _, tt := range []struct {
		name string
		goOn bool
		want store.Status
	}{
		{"holds once the step ran", true, store.StatusCompleted},
		{"never holds", false, store.StatusWaiting},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t)
			res, err := prep.Runner(run.Config{Store: st, Clock: (&fakeClock{now: t0}).Now}).Start(ctx, run.Input{ID: "c1", Input: map[string]any{"go": tt.goOn}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.want {
				t.Fatalf("got %s waits %q, want %s (error %q)", res.Status, waitsText(res.Waits), tt.want, res.Error)
			}
			if tt.want == store.StatusWaiting && waitsText(res.Waits) != "event ready at ready" {
				t.Fatalf("waits %q, want the conditional event", waitsText(res.Waits))
			}
		})
	}
}
