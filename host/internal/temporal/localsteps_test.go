package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/sextant-dev/sextant/host/internal/temporal"
)

// localActivities lists the local activities a run's history recorded,
// in order, by type.
func localActivities(t *testing.T, cl *cluster, task string) []string {
	t.Helper()
	var types []string
	it := cl.c.GetWorkflowHistory(context.Background(), task, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		must(t, err)
		data := e.GetMarkerRecordedEventAttributes().GetDetails()["data"]
		if data == nil || len(data.Payloads) == 0 {
			continue
		}
		var m struct{ ActivityType string }
		must(t, json.Unmarshal(data.Payloads[0].Data, &m))
		types = append(types, m.ActivityType)
	}
	return types
}

// TestLocalStepsNavigatorFails: a navigator call that fails after a local
// step ran (in BeginNext, then in StepNext) hands the step's outcome to
// Next: every step runs once, and the run ends as the local run does.
func TestLocalStepsNavigatorFails(t *testing.T) {
	cl := startCluster(t, nil, 0, chain10)
	var mu sync.Mutex
	calls := 0
	ran := map[string]int{}
	cl.addWorker(t, temporal.WorkerOptions{
		OnStep: func(_ context.Context, _, token string) {
			mu.Lock()
			ran[token]++
			mu.Unlock()
		},
		OnAdvance: func(string) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 1 || calls == 3 {
				return errors.New("navigator unreachable")
			}
			return nil
		}}, chain10)
	runLikeLocal(t, cl, chain10, temporal.RunInput{Pipeline: "chain10", Task: "lnf-1", Input: map[string]any{"topic": "navfail"},
		LocalSteps: true})
	want := []string{"BeginNext", "Next", "StepNext", "Next", "StepNext", "StepNext", "StepNext", "sextant.record"}
	if got := localActivities(t, cl, "lnf-1"); !slices.Equal(got, want) {
		t.Errorf("local activities %q, want %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	for token, n := range ran {
		if n != 1 {
			t.Errorf("step %s ran %d times, want once", token, n)
		}
	}
	if len(ran) != 5 {
		t.Errorf("%d steps ran, want 5: %v", len(ran), ran)
	}
}

// TestLocalStepsLeaveRoomForNavigator: a local step is bounded by the
// step timeout inside its local activity, which has a minute beyond it for
// the navigator call after the step (BeginNext and StepNext alike), so a
// step that ends near its bound is not run again because the call after
// it ran out of time.
func TestLocalStepsLeaveRoomForNavigator(t *testing.T) {
	cl := startCluster(t, nil, 0, chain10)
	var mu sync.Mutex
	room := map[string]time.Duration{}
	cl.addWorker(t, temporal.WorkerOptions{
		OnStep: func(ctx context.Context, _, token string) {
			step, ok := ctx.Deadline()
			info := activity.GetInfo(ctx)
			mu.Lock()
			defer mu.Unlock()
			if !ok || info.Deadline.IsZero() {
				room[token] = -1
				return
			}
			room[token] = info.Deadline.Sub(step)
		}}, chain10)
	runLikeLocal(t, cl, chain10, temporal.RunInput{Pipeline: "chain10", Task: "lroom-1", Input: map[string]any{"topic": "room"},
		LocalSteps: true, StepTimeout: time.Hour})
	mu.Lock()
	defer mu.Unlock()
	if len(room) != 5 {
		t.Fatalf("%d steps ran, want 5: %v", len(room), room)
	}
	for token, d := range room {
		if d < 30*time.Second {
			t.Errorf("step %s: its local activity ends %v after the step's own bound, want about a minute", token, d)
		}
	}
}
