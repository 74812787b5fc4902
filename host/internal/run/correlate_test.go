package run_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// TestCorrelate: a keyed message goes to the preferred task when it
// subscribes, else to the oldest waiting task whose subscription has the
// message's name and key; a key nobody waits with is invalid input.
func TestCorrelate(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/live/keyed.toml")
	st := openStore(t)
	clock := &fakeClock{now: t0}
	r := prep.Runner(run.Config{Store: st, Clock: clock.Now})
	for _, tc := range []struct{ id, order string }{{"k1", "o-42"}, {"k2", "o-42"}, {"k3", "o-7"}} {
		clock.Advance(time.Second) // k1 is the oldest
		res, err := r.Start(ctx, run.Input{ID: tc.id, Input: map[string]any{"orderId": tc.order}})
		if err != nil || res.Status != store.StatusWaiting {
			t.Fatalf("start %s: %v %+v", tc.id, err, res)
		}
	}
	paid := func(key string) run.Delivery { return run.Delivery{Kind: store.WaitMessage, Name: "paid", Key: key} }
	for _, tc := range []struct {
		key, prefer, want string
	}{
		{"o-42", "", "k1"},
		{"o-42", "k2", "k2"},
		{"o-42", "k3", "k1"}, // k3 waits with another key
		{"o-7", "", "k3"},
	} {
		got, err := run.Correlate(ctx, st, paid(tc.key), tc.prefer)
		if err != nil || got != tc.want {
			t.Errorf("Correlate(%s, prefer %q) = %q, %v; want %q", tc.key, tc.prefer, got, err, tc.want)
		}
	}
	_, err := run.Correlate(ctx, st, paid("o-9"), "")
	var ns *run.NoSubscriberError
	if !errors.As(err, &ns) || !errors.Is(err, sdk.ErrInvalid) || err.Error() != `no waiting task has a subscription to message "paid" with correlation key "o-9"` {
		t.Fatalf("unknown key: %v, want a NoSubscriberError", err)
	}
}
