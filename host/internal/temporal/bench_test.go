package temporal_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	sxtemporal "github.com/sextant-dev/sextant/host/internal/temporal"
	"github.com/sextant-dev/sextant/host/internal/temporal/temporaltest"
	"github.com/sextant-dev/sextant/sdk"
)

// chain10 is the pipeline every BenchmarkTemporal row runs.
const chain10 = "../run/testdata/chain10/pipeline.toml"

// BenchmarkTemporal/run runs the 10-step chain of BenchmarkRun (5 scripted
// LLM calls, 5 expressions) start to end on a local dev server with two
// in-process workers, many runs at once, each recorded in the store when
// it ends; every step is an activity and every navigator call a local
// activity. run-local-steps runs the steps as local activities.
//
// sdk-baseline is the same chain written by hand against Temporal's Go
// SDK, as a user without sextant would: one workflow whose five LLM
// steps ask the same scripted provider in activities with the options
// sextant gives its steps, and whose five expression steps compute in
// the workflow (sextant runs them inside its navigator's local activity),
// on two workers of the same server, nothing recorded anywhere but in
// Temporal. sdk-baseline-local runs them as local activities. The rows
// share one dev server, so their ratio is what sextant costs on top of
// Temporal; the absolute figures are bounded by the server's history
// writes (SQLite here).
func BenchmarkTemporal(b *testing.B) {
	srv := temporaltest.Start(b)
	for _, bc := range []struct {
		name     string
		local    bool
		baseline bool
	}{
		{"sdk-baseline", false, true},
		{"run", false, false},
		{"sdk-baseline-local", true, true},
		{"run-local-steps", true, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.baseline {
				benchBaseline(b, srv, bc.local)
			} else {
				benchRun(b, srv, bc.local)
			}
		})
	}
}

// benchRuns numbers the workflows of every row: they share a server.
var benchRuns atomic.Int64

// benchParallel runs one workflow per iteration from 8×GOMAXPROCS
// goroutines; start starts workflow id and wait waits for its end. It
// reports the history of the last run: its events and their bytes, what
// the server writes per run; and the CPU time per run of this process
// (workers and client) and of the server, which a busy machine's other
// work does not inflate as it does the wall time behind runs/s.
func benchParallel(b *testing.B, srv *temporaltest.Server, c client.Client, start, wait func(id string) error) {
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	srv0, srvOK := srv.CPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := "bench-" + strconv.FormatInt(benchRuns.Add(1), 10)
			if err := start(id); err != nil {
				b.Error(err)
				return
			}
			if err := wait(id); err != nil {
				b.Errorf("run %s: %v", id, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	var ru1 syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru1) == nil {
		cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "worker-cpu-ns/run")
	}
	if srv1, ok := srv.CPU(); ok && srvOK {
		b.ReportMetric(float64((srv1-srv0).Nanoseconds())/float64(b.N), "server-cpu-ns/run")
	}
	events, size := 0, 0
	it := c.GetWorkflowHistory(context.Background(), "bench-"+strconv.FormatInt(benchRuns.Load(), 10), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		events++
		size += proto.Size(e)
	}
	b.ReportMetric(float64(events), "events/run")
	b.ReportMetric(float64(size), "history-B/run")
}

func benchRun(b *testing.B, srv *temporaltest.Server, localSteps bool) {
	ctx := context.Background()
	cl := startCluster(b, srv, 2, chain10)
	var pipe string
	for name := range cl.preps {
		pipe = name
	}
	benchParallel(b, srv, cl.c, func(id string) error {
		cl.startWith(b, sxtemporal.RunInput{Pipeline: pipe, Task: id, Input: map[string]any{"topic": id}, LocalSteps: localSteps})
		return nil
	}, func(id string) error {
		res, err := sxtemporal.Result(ctx, cl.c, id)
		if err == nil && (res.Status != store.StatusCompleted || res.Steps != 10) {
			err = fmt.Errorf("%+v", res)
		}
		return err
	})
}

// baselineQueues numbers the baseline's task queues (a row runs more
// than once, and its workers of the run before stop at its cleanup).
var baselineQueues atomic.Int64

func benchBaseline(b *testing.B, srv *temporaltest.Server, local bool) {
	ctx := context.Background()
	prep := prepare(b, chain10)
	queue := fmt.Sprintf("baseline-%d", baselineQueues.Add(1))
	acts := &chainActivities{providers: prep.Providers}
	for range 2 {
		w := worker.New(srv.Dial(b), queue, worker.Options{})
		w.RegisterWorkflowWithOptions(chainWorkflow, workflow.RegisterOptions{Name: "chain10"})
		w.RegisterActivityWithOptions(acts.LLM, activity.RegisterOptions{Name: "llm"})
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(w.Stop)
	}
	c := srv.Dial(b)
	benchParallel(b, srv, c, func(id string) error {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, "chain10", chainInput{Topic: id, Local: local})
		return err
	}, func(id string) error {
		var out chainOutput
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil {
			return err
		}
		if !out.Done || out.Verdict != `{"ok": true}` {
			return fmt.Errorf("%+v", out)
		}
		return nil
	})
}

type chainInput struct {
	Topic string `json:"topic"`
	Local bool   `json:"local"`
}

type chainOutput struct {
	Verdict string `json:"verdict"`
	Done    bool   `json:"done"`
}

// chainWorkflow is chain10 written by hand: s1, s3, s5, s7 and s9 ask
// the provider, each an activity with the options sextant gives its
// steps; s2, s4, s6, s8 and s10 compute.
func chainWorkflow(ctx workflow.Context, in chainInput) (*chainOutput, error) {
	retry := &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		MaximumAttempts: sxtemporal.DefaultStepAttempts}
	if in.Local {
		ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: sxtemporal.DefaultStepTimeout, RetryPolicy: retry})
	} else {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: sxtemporal.DefaultStepTimeout,
			HeartbeatTimeout: 5 * time.Second, RetryPolicy: retry})
	}
	call := func(name string, out any, args ...any) error {
		if in.Local {
			return workflow.ExecuteLocalActivity(ctx, name, args...).Get(ctx, out)
		}
		return workflow.ExecuteActivity(ctx, name, args...).Get(ctx, out)
	}
	// The expression steps are computed here, in the workflow: sextant
	// runs them inside Advance, a local activity, never as activities.
	var a1, a3, a5, a7, verdict string
	n2 := 2
	if err := call("llm", &a1, "s1", "Step 1 for "+in.Topic); err != nil {
		return nil, err
	}
	n4 := n2 * 2
	if err := call("llm", &a3, "s3", "Step 3 after "+a1); err != nil {
		return nil, err
	}
	n6 := n4 + 2
	if err := call("llm", &a5, "s5", "Step 5 after "+a3); err != nil {
		return nil, err
	}
	n8 := n6 + 2
	if err := call("llm", &a7, "s7", "Step 7 after "+a5); err != nil {
		return nil, err
	}
	if err := call("llm", &verdict, "s9", "Step 9 after "+a7); err != nil {
		return nil, err
	}
	done := n8 == 8
	return &chainOutput{Verdict: verdict, Done: done}, nil
}

// chainActivities are the baseline's steps.
type chainActivities struct{ providers *run.Providers }

// LLM asks the pipeline's provider, as a sextant LLM step does.
func (a *chainActivities) LLM(ctx context.Context, step, prompt string) (string, error) {
	resp, _, _, err := a.providers.Chat(ctx, "default", &sdk.ChatRequest{Step: step,
		Messages: []sdk.Message{{Role: "user", Content: prompt}}})
	if err != nil {
		return "", err
	}
	return resp.Text, nil
}
