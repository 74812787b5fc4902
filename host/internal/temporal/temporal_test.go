package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/temporal"
	"github.com/sextant-dev/sextant/host/internal/temporal/temporaltest"
	_ "github.com/sextant-dev/sextant/navigators/bpmn"
	_ "github.com/sextant-dev/sextant/navigators/chain"
	_ "github.com/sextant-dev/sextant/navigators/dag"
	_ "github.com/sextant-dev/sextant/plugins/openai"
	_ "github.com/sextant-dev/sextant/plugins/records"
	_ "github.com/sextant-dev/sextant/plugins/script"
	"github.com/sextant-dev/sextant/sdk"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func registry(tb testing.TB) *plugin.Registry {
	tb.Helper()
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		tb.Fatal(err)
	}
	return plugin.NewRegistry(entries, plugin.WithLogger(quiet()))
}

func prepare(tb testing.TB, path string) *run.Prepared {
	tb.Helper()
	prep, err := run.Prepare(context.Background(), path, registry(tb), quiet())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { prep.Close(context.Background()) })
	return prep
}

func openStore(tb testing.TB) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), tb.TempDir(), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// cluster is a dev server with in-process workers on one task queue, all
// landing their results in one store.
type cluster struct {
	srv   *temporaltest.Server
	c     client.Client
	st    *store.Store
	queue string
	preps map[string]*run.Prepared // the starter's view of each pipeline
	// recorded is, by task, how many spans the record of its run carried.
	recorded sync.Map
}

// countingSink notes how many spans each record carries.
type countingSink struct {
	temporal.Sink
	cl *cluster
}

func (k countingSink) RecordRun(ctx context.Context, r *run.RunRecord) error {
	k.cl.recorded.Store(r.Task.ID, len(r.Spans))
	return k.Sink.RecordRun(ctx, r)
}

var queueChars = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// startCluster starts a server and n workers for the pipelines (files).
func startCluster(t testing.TB, srv *temporaltest.Server, n int, files ...string) *cluster {
	t.Helper()
	if srv == nil {
		srv = temporaltest.Start(t)
	}
	cl := &cluster{srv: srv, c: srv.Dial(t), st: openStore(t), queue: "q-" + queueChars.ReplaceAllString(t.Name(), "-"),
		preps: map[string]*run.Prepared{}}
	for _, f := range files {
		p := prepare(t, f)
		cl.preps[p.Pipeline.Name] = p
	}
	for range n {
		cl.addWorker(t, temporal.WorkerOptions{}, files...)
	}
	return cl
}

// addWorker starts one more worker with its own plugins.
func (cl *cluster) addWorker(t testing.TB, opts temporal.WorkerOptions, files ...string) *temporal.Worker {
	t.Helper()
	m := temporal.PipelineMap{}
	for _, f := range files {
		p := prepare(t, f)
		m[p.Pipeline.Name] = p.NewStepper(run.Config{Logger: quiet()}, cl.st)
	}
	opts.TaskQueue, opts.Pipelines, opts.Sink = cl.queue, m, countingSink{temporal.StoreSink(cl.st), cl}
	w, err := temporal.NewWorker(cl.srv.Dial(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// start starts a run of the named pipeline.
func (cl *cluster) start(t testing.TB, pipe, task string, input map[string]any) {
	t.Helper()
	cl.startWith(t, temporal.RunInput{Pipeline: pipe, Task: task, Input: input})
}

// startWith starts a run as in says (the strategy and heartbeat are
// filled in).
func (cl *cluster) startWith(t testing.TB, in temporal.RunInput) {
	t.Helper()
	in.Strategy, in.Heartbeat = cl.preps[in.Pipeline].Strategy.Hash(), 5*time.Second
	if err := temporal.Start(context.Background(), cl.c, cl.queue, in); err != nil {
		t.Fatal(err)
	}
}

func readInput(t testing.TB, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// localRun runs the pipeline in-process on its own store, answering a
// person's question with answers.
func localRun(t testing.TB, file, task string, input, answers map[string]any) (*run.Result, *store.Tree) {
	t.Helper()
	ctx := context.Background()
	st := openStore(t)
	r := prepare(t, file).Runner(run.Config{Store: st, Logger: quiet()})
	res, err := r.Start(ctx, run.Input{ID: task, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status == store.StatusWaiting && len(res.Waiting) > 0 {
		if res, err = r.Resume(ctx, task, answers); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := st.Tree(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	return res, tree
}

// shape is what must be equal between a local and a Temporal run: the
// result without ids, the spans without ids and times.
func shape(t testing.TB, res *run.Result, tree *store.Tree) string {
	t.Helper()
	r := *res
	r.Task, r.Execution = "", ""
	var b strings.Builder
	js, _ := json.Marshal(r)
	b.Write(js)
	b.WriteByte('\n')
	if len(tree.Executions) != 1 {
		t.Fatalf("task %s: %d executions", tree.Task.ID, len(tree.Executions))
	}
	e := tree.Executions[0]
	fmt.Fprintf(&b, "task %s %s steps=%d trace=%v\n", tree.Task.Status, tree.Task.Pipeline, e.Checkpoint.Step, e.Execution.Trace)
	spans := e.Spans
	sort.Slice(spans, func(i, j int) bool { return spans[i].Seq < spans[j].Seq })
	for _, sp := range spans {
		attrs := map[string]any{}
		for k, v := range sp.Attributes {
			if k == "sextant.latency_ms" {
				continue
			}
			attrs[k] = v
		}
		a, _ := json.Marshal(attrs)
		parent := "root"
		if sp.ParentSpanID != "" {
			parent = "child"
		}
		fmt.Fprintf(&b, "%d %s %s %s %s %s\n", sp.Seq, sp.Name, sp.Kind, parent, sp.Status.Code, a)
	}
	fmt.Fprintf(&b, "recordings %d\n", len(tree.Recordings))
	return b.String()
}

// TestExamplesOnTemporal runs every input of the example pipelines on a
// dev server with two workers and checks each run lands in the store with
// the same result and spans as a local run: the support agent's tool
// calls, a person's approval of one, and their recordings included.
func TestExamplesOnTemporal(t *testing.T) {
	files := map[string]string{
		"email-triage":     "../../../pipelines/email-triage/pipeline.toml",
		"research-report":  "../../../pipelines/research-report/pipeline.toml",
		"answer-and-learn": "../../../pipelines/answer-and-learn/pipeline.toml",
		"support-agent":    "../../../pipelines/support-agent/pipeline.toml",
	}
	var all []string
	for _, f := range files {
		all = append(all, f)
	}
	sort.Strings(all)
	cl := startCluster(t, nil, 2, all...)
	ctx := context.Background()
	answers := map[string]any{"answer": "yes"}
	for _, name := range []string{"email-triage", "research-report", "answer-and-learn", "support-agent"} {
		inputs, _ := filepath.Glob(filepath.Join(filepath.Dir(files[name]), "inputs", "*.json"))
		if len(inputs) == 0 {
			t.Fatalf("%s: no inputs", name)
		}
		for i, in := range inputs {
			t.Run(name+"/"+filepath.Base(in), func(t *testing.T) {
				task := fmt.Sprintf("%s-%d", name, i)
				input := readInput(t, in)
				wantRes, wantTree := localRun(t, files[name], task, input, answers)
				cl.start(t, name, task, input)
				res, err := temporal.Follow(ctx, cl.c, task, temporal.UntilWait)
				if err != nil {
					t.Fatal(err)
				}
				if res.Status == store.StatusWaiting {
					if err := temporal.Resume(ctx, cl.c, task, answers); err != nil {
						t.Fatal(err)
					}
					if res, err = temporal.Follow(ctx, cl.c, task, temporal.UntilWait); err != nil {
						t.Fatal(err)
					}
				}
				if res.Status != wantRes.Status {
					t.Fatalf("status %s (%s), want %s", res.Status, res.Error, wantRes.Status)
				}
				// Follow returns once the run ended; the record lands
				// before the workflow closes.
				if _, err := temporal.Result(ctx, cl.c, task); err != nil {
					t.Fatal(err)
				}
				tree, err := cl.st.Tree(ctx, task)
				if err != nil {
					t.Fatal(err)
				}
				got, want := shape(t, res, tree), shape(t, wantRes, wantTree)
				if got != want {
					t.Errorf("temporal run differs from the local run\n--- got\n%s--- want\n%s", got, want)
				}
			})
		}
	}
}

// TestTimerAndHumanSurviveRestart runs a routine that waits for a person,
// then for a 2 s BPMN timer. Both workers and the dev server are stopped
// and started again while the run waits for the person, and again while
// it waits for the timer (which falls due while no worker runs): the run
// takes the answer, the timer fires once, and the run completes with each
// step once.
func TestTimerAndHumanSurviveRestart(t *testing.T) {
	const file = "testdata/restart/pipeline.toml"
	ctx := context.Background()
	cl := startCluster(t, nil, 0, file)
	workers := func() func() {
		a := cl.addWorker(t, temporal.WorkerOptions{}, file)
		b := cl.addWorker(t, temporal.WorkerOptions{}, file)
		return func() { a.Stop(); b.Stop() }
	}
	restart := func(stopWorkers func()) func() {
		stopWorkers()
		cl.srv.Restart(t)
		cl.c = cl.srv.Dial(t)
		return workers()
	}
	stopWorkers := workers()
	// Following a run before it started is "not found", not a wait for a
	// workflow that does not exist yet to start and end.
	fctx, fcancel := context.WithTimeout(ctx, time.Minute)
	var nf *serviceerror.NotFound
	if _, err := temporal.Follow(fctx, cl.c, "wait-1", temporal.UntilWait); !errors.As(err, &nf) {
		t.Fatalf("follow before the start: %v, want not found", err)
	}
	fcancel()
	cl.start(t, "wait-twice", "wait-1", nil)
	res, err := temporal.Follow(ctx, cl.c, "wait-1", temporal.UntilWait)
	must(t, err)
	if res.Status != store.StatusWaiting || len(res.Waiting) != 1 || res.Waiting[0].Node != "ask" {
		t.Fatalf("first wait: %+v", res)
	}

	stopWorkers = restart(stopWorkers)
	must(t, temporal.Resume(ctx, cl.c, "wait-1", map[string]any{"answer": "yes"}))
	res, err = temporal.Follow(ctx, cl.c, "wait-1", temporal.UntilWait)
	must(t, err)
	if res.Status != store.StatusWaiting || len(res.Waits) != 1 || res.Waits[0].Kind != store.WaitTimer {
		t.Fatalf("second wait: %+v", res)
	}
	due := res.Waits[0].Due
	if err := temporal.Resume(ctx, cl.c, "wait-1", map[string]any{"answer": "again"}); err == nil ||
		!strings.Contains(err.Error(), "is not waiting for an answer") {
		t.Errorf("an answer while the run waits for a timer: %v, want refused", err)
	}

	stopWorkers = restart(stopWorkers)
	defer stopWorkers()
	res, err = temporal.Result(ctx, cl.c, "wait-1")
	must(t, err)
	if res.Status != store.StatusCompleted || res.Steps != 2 {
		t.Fatalf("end: %+v", res)
	}
	if x := res.Output["after"]; fmt.Sprint(x) != "map[x:1]" {
		t.Errorf("output after = %v, want map[x:1]", x)
	}
	tree, err := cl.st.Tree(ctx, "wait-1")
	must(t, err)
	steps := map[string]int{}
	for _, sp := range tree.Executions[0].Spans {
		if strings.HasPrefix(sp.Name, "step ") {
			steps[sp.Name]++
			if sp.Name == "step after" && sp.Start.Before(due) {
				t.Errorf("step after started at %s, before the timer was due (%s)", sp.Start, due)
			}
		}
	}
	if len(steps) != 2 || steps["step ask"] != 1 || steps["step after"] != 1 {
		t.Errorf("steps in the store: %v, want ask and after once", steps)
	}
}

// TestRefusals checks what the workflow refuses, with the errors the CLI
// prints: a message nothing waits for, an answer to a run that asks
// nothing, a task id used before, a task that does not exist.
func TestRefusals(t *testing.T) {
	const file = "../../../pipelines/email-triage/pipeline.toml"
	ctx := context.Background()
	cl := startCluster(t, nil, 1, file)
	input := readInput(t, "../../../pipelines/email-triage/inputs/invoice.json")
	cl.start(t, "email-triage", "inv", input)
	res, err := temporal.Follow(ctx, cl.c, "inv", temporal.UntilWait)
	must(t, err)
	if res.Status != store.StatusWaiting {
		t.Fatalf("%+v", res)
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"message nothing waits for", temporal.Deliver(ctx, cl.c, "inv", run.Delivery{Kind: store.WaitMessage, Name: "nope"}),
			`task inv does not wait for message "nope"; it waits for: answer at confirm: Do flag_financial for "Invoice 4471 overdue"? — resume with --set answer=…`},
		{"task id used before", temporal.Start(ctx, cl.c, cl.queue, temporal.RunInput{Pipeline: "email-triage", Task: "inv"}),
			"task inv exists on Temporal already"},
		{"unknown task", temporal.Resume(ctx, cl.c, "nosuch", map[string]any{"answer": "yes"}), "task nosuch: no such run on Temporal"},
		{"no answers", temporal.Resume(ctx, cl.c, "inv", nil), "no answers: give --set answer=…"},
	} {
		if c.err == nil || c.err.Error() != c.want || !errors.Is(c.err, sdk.ErrInvalid) {
			t.Errorf("%s: %v, want %q (invalid input)", c.name, c.err, c.want)
		}
	}
	must(t, temporal.Resume(ctx, cl.c, "inv", map[string]any{"answer": "yes"}))
	if res, err = temporal.Follow(ctx, cl.c, "inv", temporal.UntilWait); err != nil || res.Status != store.StatusCompleted {
		t.Fatalf("after the answer: %v %+v", err, res)
	}
	if _, err := temporal.Result(ctx, cl.c, "inv"); err != nil {
		t.Fatal(err)
	}
	if err := temporal.Resume(ctx, cl.c, "inv", map[string]any{"answer": "yes"}); err == nil ||
		err.Error() != "task inv has ended on Temporal; it waits for nothing" || !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("an answer to a run that ended: %v", err)
	}
}

// TestMessagesAndSignals runs a BPMN routine that waits for a 2 s timer,
// then a message, then a signal: the message is delivered to its task,
// the signal broadcast to the runs that wait for it, and the message's
// variable reaches the last step.
func TestMessagesAndSignals(t *testing.T) {
	const file = "testdata/events/pipeline.toml"
	ctx := context.Background()
	cl := startCluster(t, nil, 2, file)
	cl.start(t, "events", "ev-1", nil)
	res, err := temporal.Follow(ctx, cl.c, "ev-1", temporal.UntilEvent)
	must(t, err)
	if res.Status != store.StatusWaiting || len(res.Waits) != 1 || res.Waits[0].Kind != store.WaitMessage || res.Waits[0].Name != "approved" {
		t.Fatalf("after the timer: %+v", res)
	}
	if got, err := temporal.Broadcast(ctx, cl.c, "", "go", nil, 0); err != nil || len(got) != 0 {
		t.Fatalf("a signal nobody waits for yet: %v %v", got, err)
	}
	must(t, temporal.Deliver(ctx, cl.c, "ev-1", run.Delivery{Kind: store.WaitMessage, Name: "approved", Vars: map[string]any{"who": "ann"}}))
	res, err = temporal.Follow(ctx, cl.c, "ev-1", temporal.UntilEvent)
	must(t, err)
	if res.Status != store.StatusWaiting || len(res.Waits) != 1 || res.Waits[0].Kind != store.WaitSignal {
		t.Fatalf("after the message: %+v", res)
	}
	if got, err := temporal.Broadcast(ctx, cl.c, "other-pipeline", "go", nil, 0); err != nil || len(got) != 0 {
		t.Fatalf("a signal for another pipeline's runs: %v %v", got, err)
	}
	got, err := temporal.Broadcast(ctx, cl.c, "events", "go", nil, 0)
	if err != nil || len(got) != 1 || got[0] != "ev-1" {
		t.Fatalf("broadcast: %v %v", got, err)
	}
	res, err = temporal.Result(ctx, cl.c, "ev-1")
	must(t, err)
	if res.Status != store.StatusCompleted || res.Steps != 2 || fmt.Sprint(res.Output["after"]) != "map[seen:ann]" {
		t.Fatalf("end: %+v", res)
	}
	tree, err := cl.st.Tree(ctx, "ev-1")
	must(t, err)
	if tr := fmt.Sprint(tree.Executions[0].Execution.Trace); !strings.HasPrefix(tr, "[step ask call ") || !strings.HasSuffix(tr, " step after]") {
		t.Errorf("trace %s", tr)
	}
	// The timer, the message and the signal are recorded as deliveries,
	// so a replay receives them too: the ask call and three events.
	if len(tree.Recordings) != 4 {
		t.Errorf("%d recordings, want 4 (one call, three events)", len(tree.Recordings))
	}
}

// TestContinueAsNew continues runs as new every other round (a long run
// does when Temporal suggests it): a chain and a run that waits for a
// person and a timer end as they would without, with one execution.
func TestContinueAsNew(t *testing.T) {
	const chain, wait = "../run/testdata/chain10/pipeline.toml", "testdata/restart/pipeline.toml"
	ctx := context.Background()
	cl := startCluster(t, nil, 2, chain, wait)
	res, tree := runLikeLocal(t, cl, chain, temporal.RunInput{Pipeline: "chain10", Task: "can-1", Input: map[string]any{"topic": "continued"}, ContinueAfter: 2})
	if res.Execution != tree.Executions[0].Execution.ID {
		t.Errorf("result names execution %s, the store %s", res.Execution, tree.Executions[0].Execution.ID)
	}
	d, err := cl.c.DescribeWorkflowExecution(ctx, "can-1", "")
	must(t, err)
	if info := d.GetWorkflowExecutionInfo(); info.GetFirstRunId() == info.GetExecution().GetRunId() {
		t.Errorf("can-1 never continued as new (run %s)", info.GetExecution().GetRunId())
	}

	cl.startWith(t, temporal.RunInput{Pipeline: "wait-twice", Task: "can-2", ContinueAfter: 1})
	res, err = temporal.Follow(ctx, cl.c, "can-2", temporal.UntilPerson)
	must(t, err)
	if len(res.Waiting) != 1 {
		t.Fatalf("can-2 should wait for a person: %+v", res)
	}
	must(t, temporal.Resume(ctx, cl.c, "can-2", map[string]any{"answer": "yes"}))
	res, err = temporal.Result(ctx, cl.c, "can-2")
	must(t, err)
	if res.Status != store.StatusCompleted || fmt.Sprint(res.Output["after"]) != "map[x:1]" {
		t.Errorf("continued waiting run: %+v", res)
	}
}

// runLikeLocal runs in on cl to its end and checks that it lands in the
// store with the result and spans a local run of file gives.
func runLikeLocal(t *testing.T, cl *cluster, file string, in temporal.RunInput) (*run.Result, *store.Tree) {
	t.Helper()
	ctx := context.Background()
	wantRes, wantTree := localRun(t, file, in.Task, in.Input, nil)
	cl.startWith(t, in)
	res, err := temporal.Result(ctx, cl.c, in.Task)
	must(t, err)
	tree, err := cl.st.Tree(ctx, in.Task)
	must(t, err)
	if got, want := shape(t, res, tree), shape(t, wantRes, wantTree); got != want {
		t.Errorf("%s differs from the local run\n--- got\n%s--- want\n%s", in.Task, got, want)
	}
	return res, tree
}

// TestSpansStaged: a run's spans go to the store in batches as it runs
// (RunInput.SpanBatch), across a continue-as-new, and the run lands with
// the same spans, numbered the same, as a local run: no message carries
// all of them.
func TestSpansStaged(t *testing.T) {
	const chain = "../run/testdata/chain10/pipeline.toml"
	ctx := context.Background()
	cl := startCluster(t, nil, 2, chain)
	_, tree := runLikeLocal(t, cl, chain, temporal.RunInput{Pipeline: "chain10", Task: "staged-1", Input: map[string]any{"topic": "staged"}, ContinueAfter: 2, SpanBatch: 3})
	// Count the batches over every run of the workflow (it continued as
	// new), and the spans the final record carried.
	d, err := cl.c.DescribeWorkflowExecution(ctx, "staged-1", "")
	must(t, err)
	stages, recorded := 0, -1
	if n, ok := cl.recorded.Load("staged-1"); ok {
		recorded = n.(int)
	}
	runID := d.GetWorkflowExecutionInfo().GetFirstRunId()
	for runID != "" {
		it := cl.c.GetWorkflowHistory(ctx, "staged-1", runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		next := ""
		for it.HasNext() {
			ev, err := it.Next()
			must(t, err)
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "sextant.stage_spans" {
				stages++
			}
			if c := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); c != nil {
				next = c.GetNewExecutionRunId()
			}
		}
		runID = next
	}
	if stages < 2 || recorded < 0 || recorded >= 3 {
		t.Errorf("%d staging calls and %d spans in the record, want several batches of 3 and fewer than 3 left for the record (of %d spans)",
			stages, recorded, len(tree.Executions[0].Spans))
	}
}

// TestBoundaryTimerInterruptsStep runs an LLM step whose provider never
// answers, with an interrupting 1 s boundary timer: the timer cancels the
// step activity's call (which leaves nothing) and the run takes the
// timer's path. (Not compared with a local run: the local engine fails
// this run when the provider's own deadline timer fires a hair before the
// step's, see RunStep.)
func TestBoundaryTimerInterruptsStep(t *testing.T) {
	held, closing := make(chan struct{}, 8), make(chan struct{})
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held <- struct{}{}
		select { // answers only by being cancelled
		case <-r.Context().Done():
		case <-closing:
		}
	}))
	defer hold.Close()
	defer close(closing)
	t.Setenv("SEXTANT_TEST_HOLD_URL", hold.URL+"/v1")
	t.Setenv("SEXTANT_TEST_OPENAI_KEY", "sk-test")
	const file = "testdata/boundary/pipeline.toml"
	ctx := context.Background()
	cl := startCluster(t, nil, 2, file)
	cl.start(t, "boundary", "bnd-1", nil)
	res, err := temporal.Result(ctx, cl.c, "bnd-1")
	must(t, err)
	if res.Status != store.StatusCompleted || fmt.Sprint(res.Output["escalate"]) != "map[y:2]" || res.Output["after"] != nil {
		t.Fatalf("%+v", res)
	}
	tree, err := cl.st.Tree(ctx, "bnd-1")
	must(t, err)
	if tr := fmt.Sprint(tree.Executions[0].Execution.Trace); tr != "[step escalate]" || res.Steps != 1 || len(tree.Recordings) != 1 {
		t.Errorf("trace %s, %d steps, %d recordings; want [step escalate], 1, 1 (the timer's delivery)", tr, res.Steps, len(tree.Recordings))
	}
	if len(held) != 1 {
		t.Errorf("the provider was asked %d times, want 1", len(held))
	}
}

// TestLocalSteps runs steps as local activities: the examples' runs end as
// local runs do, a person's answer included.
func TestLocalSteps(t *testing.T) {
	const chain, triage = "../run/testdata/chain10/pipeline.toml", "../../../pipelines/email-triage/pipeline.toml"
	ctx := context.Background()
	cl := startCluster(t, nil, 2, chain, triage)
	for _, c := range []struct {
		pipe, file, task string
		input            map[string]any
	}{
		{"chain10", chain, "ls-1", map[string]any{"topic": "local"}},
		{"email-triage", triage, "ls-2", readInput(t, "../../../pipelines/email-triage/inputs/invoice.json")},
	} {
		answers := map[string]any{"answer": "yes"}
		wantRes, wantTree := localRun(t, c.file, c.task, c.input, answers)
		cl.startWith(t, temporal.RunInput{Pipeline: c.pipe, Task: c.task, Input: c.input, LocalSteps: true})
		res, err := temporal.Follow(ctx, cl.c, c.task, temporal.UntilWait)
		must(t, err)
		if res.Status == store.StatusWaiting {
			must(t, temporal.Resume(ctx, cl.c, c.task, answers))
		}
		res, err = temporal.Result(ctx, cl.c, c.task)
		must(t, err)
		tree, err := cl.st.Tree(ctx, c.task)
		must(t, err)
		if got, want := shape(t, res, tree), shape(t, wantRes, wantTree); got != want {
			t.Errorf("%s with local steps differs from the local run\n--- got\n%s--- want\n%s", c.task, got, want)
		}
	}
}

// flakySink refuses every call while down, and says when it refused one.
type flakySink struct {
	temporal.Sink
	down    atomic.Bool
	refused chan struct{}
}

func (f *flakySink) refuse() error {
	if !f.down.Load() {
		return nil
	}
	select {
	case f.refused <- struct{}{}:
	default:
	}
	return errors.New("sink unreachable")
}

func (f *flakySink) Recording(ctx context.Context, key string) (*store.Recording, error) {
	if err := f.refuse(); err != nil {
		return nil, err
	}
	return f.Sink.Recording(ctx, key)
}

func (f *flakySink) PutRecording(ctx context.Context, r *store.Recording) error {
	if err := f.refuse(); err != nil {
		return err
	}
	return f.Sink.PutRecording(ctx, r)
}

func (f *flakySink) RecordRun(ctx context.Context, r *run.RunRecord) error {
	if err := f.refuse(); err != nil {
		return err
	}
	return f.Sink.RecordRun(ctx, r)
}

// TestSinkOutage: while the store's sink is unreachable a run's LLM step
// cannot read or write its recording; the step is retried, not failed,
// and the run completes as a local run once the sink is back. With local
// steps the run begins without its first step (BeginNext leaves it) and
// runs it again with the step's retries (StepNext).
func TestSinkOutage(t *testing.T) {
	const file = "../run/testdata/chain10/pipeline.toml"
	cl := startCluster(t, nil, 0, file)
	sink := &flakySink{Sink: temporal.StoreSink(cl.st), refused: make(chan struct{}, 1)}
	p := prepare(t, file)
	w, err := temporal.NewWorker(cl.srv.Dial(t), temporal.WorkerOptions{TaskQueue: cl.queue, Sink: sink,
		Pipelines: temporal.PipelineMap{"chain10": p.NewStepper(run.Config{Logger: quiet()}, sink)}})
	must(t, err)
	must(t, w.Start())
	defer w.Stop()
	for _, c := range []struct {
		task  string
		local bool
		las   []string // the local activities of its history
	}{
		{"out-1", false, []string{"Begin", "Next", "Next", "Next", "Next", "Next", "sextant.record"}},
		{"out-2", true, []string{"BeginNext", "StepNext", "StepNext", "StepNext", "StepNext", "StepNext", "sextant.record"}},
	} {
		sink.down.Store(true)
		input := map[string]any{"topic": "outage"}
		wantRes, wantTree := localRun(t, file, c.task, input, nil)
		cl.startWith(t, temporal.RunInput{Pipeline: "chain10", Task: c.task, Input: input, LocalSteps: c.local})
		<-sink.refused // the first LLM step could not reach its recordings
		sink.down.Store(false)
		select { // a refusal that raced the store above
		case <-sink.refused:
		default:
		}
		res, err := temporal.Result(context.Background(), cl.c, c.task)
		must(t, err)
		tree, err := cl.st.Tree(context.Background(), c.task)
		must(t, err)
		if got, want := shape(t, res, tree), shape(t, wantRes, wantTree); got != want {
			t.Errorf("%s across a sink outage differs from the local run\n--- got\n%s--- want\n%s", c.task, got, want)
		}
		if got := localActivities(t, cl, c.task); !slices.Equal(got, c.las) {
			t.Errorf("%s: local activities %q, want %q", c.task, got, c.las)
		}
	}
}

// TestFollowRacingStart: a follow refused as NotFound because the run was
// not started yet, whose workflow then starts before the follow looks it
// up, follows the run (it waits for a person here) instead of waiting for
// the workflow to end — which it never would, as it waits for an answer
// the caller sends only after the follow returns.
func TestFollowRacingStart(t *testing.T) {
	const file = "testdata/restart/pipeline.toml"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := startCluster(t, nil, 1, file)
	for _, tc := range []struct {
		task string
		call func(task string) error
	}{
		{"race-follow", func(task string) error {
			res, err := temporal.Follow(ctx, cl.c, task, temporal.UntilWait)
			if err == nil && (res.Status != store.StatusWaiting || len(res.Waiting) != 1) {
				err = fmt.Errorf("followed to %+v, want waiting for a person", res)
			}
			return err
		}},
		{"race-resume", func(task string) error {
			// An answer racing the start: asked again once the workflow runs.
			return temporal.Resume(ctx, cl.c, task, map[string]any{"answer": "yes"})
		}},
	} {
		started := false
		temporal.SetNotFoundHook(func(task string) {
			if task != tc.task || started {
				return
			}
			started = true
			cl.start(t, "wait-twice", task, nil)
			// Until the run waits for its person: the follow and the
			// answer then meet a workflow that can take them.
			if _, err := temporal.Follow(ctx, cl.c, task, temporal.UntilWait); err != nil {
				t.Errorf("%s: follow from the hook: %v", task, err)
			}
		})
		err := tc.call(tc.task)
		temporal.SetNotFoundHook(nil)
		if !started {
			t.Fatalf("%s: the call was never refused as not found", tc.task)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.task, err)
		}
	}
}
