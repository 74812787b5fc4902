package run_test

import (
	"context"
	"testing"

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
