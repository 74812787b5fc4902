package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/sextant-dev/sextant/host/internal/run"
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

// TestLocalStepsSinkOutage: a run with local steps whose first step
// cannot reach its recordings begins (BeginNext leaves the step), then
// runs the step again with the step's retries (StepNext) once the sink
// is back, and ends as the local run does.
func TestLocalStepsSinkOutage(t *testing.T) {
	ctx := context.Background()
	cl := startCluster(t, nil, 0, chain10)
	sink := &flakySink{Sink: temporal.StoreSink(cl.st), refused: make(chan struct{}, 1)}
	sink.down.Store(true)
	w, err := temporal.NewWorker(cl.srv.Dial(t), temporal.WorkerOptions{TaskQueue: cl.queue, Sink: sink,
		Pipelines: temporal.PipelineMap{"chain10": prepare(t, chain10).NewStepper(run.Config{Logger: quiet()}, sink)}})
	must(t, err)
	must(t, w.Start())
	defer w.Stop()
	input := map[string]any{"topic": "outage"}
	wantRes, wantTree := localRun(t, chain10, "lso-1", input, nil)
	cl.startWith(t, temporal.RunInput{Pipeline: "chain10", Task: "lso-1", Input: input, LocalSteps: true})
	<-sink.refused
	sink.down.Store(false)
	res, err := temporal.Result(ctx, cl.c, "lso-1")
	must(t, err)
	tree, err := cl.st.Tree(ctx, "lso-1")
	must(t, err)
	if got, want := shape(t, res, tree), shape(t, wantRes, wantTree); got != want {
		t.Errorf("run across a sink outage differs from the local run\n--- got\n%s--- want\n%s", got, want)
	}
	want := []string{"BeginNext", "StepNext", "StepNext", "StepNext", "StepNext", "StepNext", "sextant.record"}
	if got := localActivities(t, cl, "lso-1"); !slices.Equal(got, want) {
		t.Errorf("local activities %q, want %q", got, want)
	}
}

// TestLocalStepsNavigatorFails: a navigator call that fails after a local
// step ran (in BeginNext, then in StepNext) hands the step's outcome to
// Next: every step runs once, and the run ends as the local run does.
func TestLocalStepsNavigatorFails(t *testing.T) {
	ctx := context.Background()
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
	input := map[string]any{"topic": "navfail"}
	wantRes, wantTree := localRun(t, chain10, "lnf-1", input, nil)
	cl.startWith(t, temporal.RunInput{Pipeline: "chain10", Task: "lnf-1", Input: input, LocalSteps: true})
	res, err := temporal.Result(ctx, cl.c, "lnf-1")
	must(t, err)
	tree, err := cl.st.Tree(ctx, "lnf-1")
	must(t, err)
	if got, want := shape(t, res, tree), shape(t, wantRes, wantTree); got != want {
		t.Errorf("run with failing navigator calls differs from the local run\n--- got\n%s--- want\n%s", got, want)
	}
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
