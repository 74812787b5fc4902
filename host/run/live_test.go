package run_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/run"
	"github.com/sextant-dev/sextant/host/store"
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
