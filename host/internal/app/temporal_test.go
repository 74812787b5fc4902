//go:build !notemporal

package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/temporal"
	"github.com/sextant-dev/sextant/host/internal/temporal/temporaltest"
)

// TestOpenTemporalFirst: a Temporal address decides before the store is
// looked at: a store that does not exist is neither refused nor created,
// and a front end that does not answer is the error.
func TestOpenTemporalFirst(t *testing.T) {
	f := newFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = Open(ctx, Target{Store: f.store, Temporal: TemporalTarget{Addr: addr, Namespace: "default"}}, options())
	if err == nil || errors.Is(err, os.ErrNotExist) {
		t.Fatalf("open with a Temporal front end that does not answer: %v, want its dial error", err)
	}
	if _, err := os.Stat(f.store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a Temporal open touched the store %s: %v", f.store, err)
	}
}

// TestOpenTemporal: with a dev server, the backend is Temporal's; what
// acts on the workers' store is refused, naming the way without
// --temporal.
func TestOpenTemporal(t *testing.T) {
	srv := temporaltest.Start(t)
	f := newFixture(t)
	b := open(t, Target{Store: f.store, Temporal: TemporalTarget{Addr: srv.HostPort, Namespace: srv.Namespace}})
	if b.Kind() != Temporal {
		t.Fatalf("kind %s, want temporal", b.Kind())
	}
	if _, err := b.Retry(context.Background(), "t1", nil); !errors.As(err, new(*UsageError)) {
		t.Fatalf("retry on Temporal: %v, want a usage error", err)
	}
	if _, err := b.Send(context.Background(), "", run.Delivery{Name: "paid", Key: "k"}); !errors.As(err, new(*UsageError)) {
		t.Fatalf("a keyed message on Temporal: %v, want a usage error", err)
	}
	if _, err := os.Stat(f.store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a Temporal open touched the store %s: %v", f.store, err)
	}
}

// serveOnTemporal starts a dev server, a worker of f's pipeline on queue
// writing to f's store, and a sextant serve --temporal over that store
// and cluster that runs f's pipeline directory, at base; call asks the
// server and wants the status given.
func serveOnTemporal(ctx context.Context, t *testing.T, queue string) (f fixture, tt TemporalTarget, call func(method, path string, body any, want int, out any), base string) {
	t.Helper()
	sv := serveCluster(ctx, t, TemporalTarget{Queue: queue})
	return sv.f, sv.tt, sv.call, sv.base
}

// served is a sextant serve --temporal over a dev server (serveCluster).
type served struct {
	f    fixture
	tt   TemporalTarget
	call func(method, path string, body any, want int, out any)
	base string
	// header is the last call's answer's header.
	header http.Header
	// worker is the worker started first; addWorker starts another.
	worker    *temporal.Worker
	addWorker func() *temporal.Worker
}

// serveCluster is serveOnTemporal on tt's queue, with tt's query
// timeout, its pipeline directory holding needs-topic (testdata) beside
// f's pipeline.
func serveCluster(ctx context.Context, t *testing.T, tt TemporalTarget) *served {
	t.Helper()
	srv := temporaltest.Start(t)
	sv := &served{f: newFixture(t)}
	dir := filepath.Dir(filepath.Dir(sv.f.pipeline))
	if err := os.CopyFS(filepath.Join(dir, "needs-topic"), os.DirFS(filepath.Join("testdata", "needs-topic"))); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, sv.f.store, store.NewConfig().WithLogger(quiet()).WithSyncCheckpoints(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tt.Addr, tt.Namespace = srv.HostPort, srv.Namespace
	sv.tt = tt
	m, closeAll, err := temporal.LoadPipelines(ctx, dir, temporal.StoreSink(st), prepare, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(context.Background()) })
	sv.addWorker = func() *temporal.Worker {
		t.Helper()
		w, err := temporal.NewWorker(srv.Dial(t), temporal.WorkerOptions{TaskQueue: tt.Queue, Pipelines: m, Sink: temporal.StoreSink(st)})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	sv.worker = sv.addWorker()
	cl, err := ServeCluster(tt, options())(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	s, err := serve.New(serve.Options{Store: st, Prepare: prepare, Logger: quiet(), Cluster: cl, Pipelines: dir})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	sv.base = hs.URL
	sv.call = func(method, path string, body any, want int, out any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(ctx, method, hs.URL+path, rd)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
		}
		sv.header = resp.Header
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	return sv
}

// TestServeOperatesTemporalRuns: a sextant serve with --temporal shows a
// run going on on the cluster, which its store lacks, lists it, answers
// it and cancels it through the Temporal backend; the cancelled run is
// then the store's, recorded with who and why, and a second cancel, like
// one of a task nobody has, is refused.
func TestServeOperatesTemporalRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, tt, call, _ := serveOnTemporal(ctx, t, "q-serve")
	b := open(t, Target{Temporal: tt})
	for _, id := range []string{"on-temporal", "answered"} {
		prep, err := prepare(ctx, f.pipeline)
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.Run(ctx, RunRequest{Prep: prep, Input: run.Input{ID: id, Input: f.input, Tags: []string{"tag-" + id}}})
		prep.Close(ctx)
		if err != nil || res.Status != store.StatusWaiting {
			t.Fatalf("run %s on Temporal: %+v, %v; want waiting for a person", id, res, err)
		}
	}
	var d serve.TaskDetail
	call("GET", "/api/v1/tasks/on-temporal", nil, 200, &d)
	if d.Task.Status != store.StatusWaiting || d.Task.Pipeline != "email-triage" || len(d.Task.Waits) == 0 || d.Task.Waits[0].Kind != store.WaitHuman ||
		!slices.Equal(d.Task.Tags, []string{"tag-on-temporal"}) || d.Task.Strategy.Version == "" {
		t.Fatalf("a run waiting on Temporal shows as %+v", d.Task)
	}
	// Its history so far, before the workers record it: the execution,
	// the spans of the steps done (the classifier's call among them, with
	// its recording) and the state of its last step.
	if len(d.Executions) != 1 || d.Executions[0].Execution.ID == "" || d.Executions[0].Checkpoint == nil || len(d.Executions[0].Checkpoint.State) == 0 {
		t.Fatalf("a run waiting on Temporal has executions %+v", d.Executions)
	}
	steps := map[string]bool{}
	for _, sp := range d.Executions[0].Spans {
		if sp.Task != "on-temporal" || sp.Execution != d.Executions[0].Execution.ID {
			t.Fatalf("span %+v is not the run's", sp)
		}
		steps[sp.Attributes["sextant.node"].Str()] = true
	}
	if !steps["classify"] || len(d.Calls) == 0 {
		t.Fatalf("a run waiting on Temporal shows spans of steps %v and %d calls", steps, len(d.Calls))
	}
	var page serve.TaskPage
	list := func(query string, want ...string) {
		t.Helper()
		call("GET", "/api/v1/tasks?"+query, nil, 200, &page)
		var got []string
		for _, r := range page.Tasks {
			got = append(got, r.ID)
			if r.Status != store.StatusWaiting || len(r.Waits) == 0 || r.Waits[0].Kind != store.WaitHuman {
				t.Fatalf("%s lists %+v, want it waiting for a person", query, r.Task)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) || page.NextCursor != "" {
			t.Fatalf("%s lists %v (next %q), want %v", query, got, page.NextCursor, want)
		}
	}
	list("status=waiting", "answered", "on-temporal")
	list("", "answered", "on-temporal")
	list("status=running")
	list("status=completed")
	list("tag=tag-answered", "answered")
	list("since="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339), []string{}...)
	list("until="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "answered", "on-temporal")
	list("min_reward=0")

	var res run.Result
	call("POST", "/api/v1/tasks/answered/resume", map[string]any{"answers": map[string]any{"answer": "yes"}}, 200, &res)
	if res.Status != store.StatusCompleted {
		t.Fatalf("answered through the API: %+v", res)
	}
	call("POST", "/api/v1/tasks/on-temporal/cancel", map[string]any{"by": "ann", "reason": "sent twice"}, 200, &res)
	if res.Status != store.StatusCancelled {
		t.Fatalf("cancelled through the API: %+v", res)
	}
	call("GET", "/api/v1/tasks/on-temporal", nil, 200, &d)
	if d.Task.Status != store.StatusCancelled || d.Task.Cancelled == nil || d.Task.Cancelled.By != "ann" || d.Task.Cancelled.Reason != "sent twice" {
		t.Fatalf("after the cancel the task shows %+v (cancelled %+v)", d.Task, d.Task.Cancelled)
	}
	call("POST", "/api/v1/tasks/on-temporal/cancel", map[string]any{}, 409, nil)
	call("POST", "/api/v1/tasks/nobody/cancel", map[string]any{}, 404, nil)
	call("GET", "/api/v1/tasks/nobody", nil, 404, nil)
	call("GET", "/api/v1/tasks?status=waiting", nil, 200, &page)
	if len(page.Tasks) != 0 {
		t.Fatalf("listed %+v once both runs ended", page.Tasks)
	}
}

// TestServeStartsTemporalRuns: POST /api/v1/runs on a sextant serve with
// --temporal starts the run as a workflow of the cluster, which its
// worker runs: followed, it answers the run's result (the invoice waits
// for a person, answered through the API it completes, and the task
// then shows completed); with wait=false it answers 202 with a task id
// that GET /api/v1/tasks/{id} shows at once. A request the local path
// refuses is refused alike and starts no workflow.
func TestServeStartsTemporalRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, tt, call, _ := serveOnTemporal(ctx, t, "q-serve-start")
	cl, err := ServeCluster(tt, options())(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var res run.Result
	call("POST", "/api/v1/runs", map[string]any{"pipeline": "email-triage", "id": "via-api", "input": f.input}, 200, &res)
	if res.Task != "via-api" || res.Status != store.StatusWaiting {
		t.Fatalf("started through the API: %+v, want task via-api waiting for a person", res)
	}
	if onCluster, err := cl.Task(ctx, "via-api"); err != nil || onCluster.Task.Status != store.StatusWaiting || onCluster.Task.Pipeline != "email-triage" {
		t.Fatalf("the cluster has %+v, %v; want the run waiting there", onCluster, err)
	}
	var d struct {
		Task store.Task `json:"task"`
	}
	call("GET", "/api/v1/tasks/via-api", nil, 200, &d)
	if d.Task.Status != store.StatusWaiting {
		t.Fatalf("the run started through the API shows as %+v", d.Task)
	}
	call("POST", "/api/v1/tasks/via-api/resume", map[string]any{"answers": map[string]any{"answer": "yes"}}, 200, &res)
	if res.Status != store.StatusCompleted {
		t.Fatalf("answered through the API: %+v", res)
	}
	call("GET", "/api/v1/tasks/via-api", nil, 200, &d)
	if d.Task.Status != store.StatusCompleted {
		t.Fatalf("after its answer the task shows %+v", d.Task)
	}

	var accepted struct {
		Task string `json:"task"`
	}
	call("POST", "/api/v1/runs", map[string]any{"pipeline": "email-triage", "input": f.input, "wait": false}, 202, &accepted)
	if accepted.Task == "" {
		t.Fatal("202 without a task id")
	}
	call("GET", "/api/v1/tasks/"+accepted.Task, nil, 200, &d)
	if d.Task.ID != accepted.Task || d.Task.Pipeline != "email-triage" || d.Task.Status.Ended() {
		t.Fatalf("the run started with wait=false shows as %+v", d.Task)
	}
	// Resuming with no answers follows the run until it waits.
	call("POST", "/api/v1/tasks/"+accepted.Task+"/resume", map[string]any{}, 200, &res)
	if res.Status != store.StatusWaiting {
		t.Fatalf("the run started with wait=false: %+v, want waiting for a person", res)
	}

	before, _, err := cl.Running(ctx, serve.ClusterFilter{}, 500, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		body map[string]any
		want int
	}{
		{map[string]any{"pipeline": "nope", "id": "bad-1", "input": f.input}, 400},
		{map[string]any{"pipeline": "email-triage", "id": "bad-2", "file": "/elsewhere/pipeline.toml", "input": f.input}, 400},
		{map[string]any{"pipeline": "email-triage", "id": "bad-3", "input": f.input, "colour": "red"}, 400},
		{map[string]any{"pipeline": "email-triage", "id": accepted.Task, "input": f.input}, 409},
		{map[string]any{"pipeline": "email-triage", "id": "via-api", "input": f.input}, 409},
	} {
		call("POST", "/api/v1/runs", bad.body, bad.want, nil)
	}
	// An input the routine refuses (needs-topic's chain needs topic) is
	// refused before the workflow starts, naming what it lacks.
	var refused struct {
		Error serve.Error `json:"error"`
	}
	call("POST", "/api/v1/runs", map[string]any{"pipeline": "needs-topic", "id": "no-topic", "input": map[string]any{"subject": "hi"}}, 400, &refused)
	if refused.Error.Code != serve.CodeBadRequest || !strings.Contains(refused.Error.Message, `missing input "topic"`) {
		t.Fatalf("an input the routine refuses: %+v, want a 400 naming topic", refused.Error)
	}
	for _, id := range []string{"bad-1", "bad-2", "bad-3", "no-topic"} {
		if _, err := cl.Task(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused request left task %s on the cluster: %v", id, err)
		}
		call("GET", "/api/v1/tasks/"+id, nil, 404, nil)
	}
	after, _, err := cl.Running(ctx, serve.ClusterFilter{}, 500, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || len(after) != 1 || after[0].Task.ID != accepted.Task {
		t.Fatalf("runs going on after the refused requests: %+v, want only %s", after, accepted.Task)
	}
	// With its input, the same pipeline runs on the cluster.
	call("POST", "/api/v1/runs", map[string]any{"pipeline": "needs-topic", "id": "with-topic", "input": map[string]any{"topic": "hi"}}, 200, &res)
	if res.Status != store.StatusCompleted || res.Output["said"] != "hi" {
		t.Fatalf("needs-topic with its topic: %+v, want completed saying hi", res)
	}
}

// TestServeTemporalRunsWithoutWorkers: with every worker of a run's task
// queue stopped, sextant serve --temporal lists the run and shows its
// page within the query timeout, from what the cluster records (running
// since it began, its pipeline and tags) marked "workers: none
// answering", under any status filter; an answer, a message, a signal
// and a cancel are refused as unavailable, naming the task queue, and
// change nothing; once a worker polls again the run shows as it is,
// waiting for its answer.
func TestServeTemporalRunsWithoutWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sv := serveCluster(ctx, t, TemporalTarget{Queue: "q-serve-noworker", QueryTimeout: 300 * time.Millisecond})
	call := sv.call
	var res run.Result
	call("POST", "/api/v1/runs", map[string]any{"pipeline": "email-triage", "id": "unanswered", "input": sv.f.input, "tags": []string{"nightly"}}, 200, &res)
	if res.Status != store.StatusWaiting {
		t.Fatalf("started: %+v, want waiting for a person", res)
	}
	sv.worker.Stop()

	var d serve.TaskDetail
	call("GET", "/api/v1/tasks/unanswered", nil, 200, &d)
	if d.Workers != serve.WorkersNone || d.Task.Status != store.StatusRunning || d.Task.Pipeline != "email-triage" ||
		!slices.Equal(d.Task.Tags, []string{"nightly"}) || d.Task.Created.IsZero() || len(d.Executions) != 0 {
		t.Fatalf("with no worker the run shows as %+v, workers %q, executions %+v", d.Task, d.Workers, d.Executions)
	}
	var page serve.TaskPage
	for _, query := range []string{"", "status=waiting", "status=running", "tag=nightly"} {
		page = serve.TaskPage{}
		call("GET", "/api/v1/tasks?"+query, nil, 200, &page)
		if len(page.Tasks) != 1 || page.Tasks[0].ID != "unanswered" || page.Tasks[0].Workers != serve.WorkersNone || page.Tasks[0].Status != store.StatusRunning {
			t.Fatalf("with no worker, %q lists %+v", query, page.Tasks)
		}
	}
	var refused struct {
		Error serve.Error `json:"error"`
	}
	for _, op := range []struct {
		path string
		body any
	}{
		{"/api/v1/tasks/unanswered/resume", map[string]any{"answers": map[string]any{"answer": "yes"}}},
		{"/api/v1/tasks/unanswered/messages", map[string]any{"name": "paid"}},
		{"/api/v1/tasks/unanswered/cancel", map[string]any{"by": "ann"}},
		{"/api/v1/signals", map[string]any{"name": "go", "pipeline": "email-triage"}},
	} {
		call("POST", op.path, op.body, 503, &refused)
		if refused.Error.Code != serve.CodeUnavailable || !strings.Contains(refused.Error.Message, `no worker is polling task queue "q-serve-noworker"`) {
			t.Fatalf("POST %s with no worker: %+v", op.path, refused.Error)
		}
		if ra, err := strconv.Atoi(sv.header.Get("Retry-After")); err != nil || ra <= 0 {
			t.Fatalf("POST %s with no worker: Retry-After %q, want a number of seconds", op.path, sv.header.Get("Retry-After"))
		}
	}

	sv.addWorker()
	// The new worker's first poll may reach the server after the first
	// query does: ask until it answers, within the test's bound.
	tries := 0
	for ; tries == 0 || d.Workers != ""; tries++ {
		d = serve.TaskDetail{}
		call("GET", "/api/v1/tasks/unanswered", nil, 200, &d)
	}
	t.Logf("the run showed as it is after %d requests", tries)
	if d.Task.Status != store.StatusWaiting || len(d.Task.Waits) == 0 || d.Task.Waits[0].Kind != store.WaitHuman || len(d.Executions) != 1 {
		t.Fatalf("with a worker back the run shows as %+v, executions %+v", d.Task, d.Executions)
	}
	page = serve.TaskPage{}
	call("GET", "/api/v1/tasks?status=waiting", nil, 200, &page)
	if len(page.Tasks) != 1 || page.Tasks[0].Workers != "" || page.Tasks[0].Status != store.StatusWaiting {
		t.Fatalf("with a worker back, the list has %+v", page.Tasks)
	}
}

// TestTemporalCommandsWithoutWorkers: with every worker of a run's task
// queue stopped, the command line's resume fails within --query-timeout
// naming the queue, while a message and a cancel are left with Temporal
// at once; once a worker polls again, the run is recorded cancelled by
// whom the cancel named.
func TestTemporalCommandsWithoutWorkers(t *testing.T) {
	if DefaultTaskQueue != temporal.DefaultTaskQueue {
		t.Fatalf("the CLI's default task queue %q is not the workers' %q", DefaultTaskQueue, temporal.DefaultTaskQueue)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sv := serveCluster(ctx, t, TemporalTarget{Queue: "q-cli-noworker", QueryTimeout: 300 * time.Millisecond})
	var res run.Result
	sv.call("POST", "/api/v1/runs", map[string]any{"pipeline": "email-triage", "id": "cli-unanswered", "input": sv.f.input}, 200, &res)
	if res.Status != store.StatusWaiting {
		t.Fatalf("started: %+v, want waiting for a person", res)
	}
	sv.worker.Stop()
	b, err := Open(ctx, Target{Temporal: sv.tt}, options())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var nw *temporal.NoWorkerError
	if _, err := b.Resume(ctx, "cli-unanswered", map[string]any{"answer": "yes"}); !errors.As(err, &nw) || !strings.Contains(err.Error(), `task queue "q-cli-noworker"`) {
		t.Fatalf("resume with no worker: %v, want refused naming the task queue", err)
	}
	sent, err := b.Send(ctx, "cli-unanswered", run.Delivery{Kind: store.WaitMessage, Name: "paid"})
	if err != nil || sent.Status != store.StatusRunning || !strings.Contains(sent.Error, "held by Temporal") || !strings.Contains(sent.Error, "at its next wait, if it waits for it then") {
		t.Fatalf("send with no worker: %+v %v, want held", sent, err)
	}
	got, err := b.Cancel(ctx, "cli-unanswered", run.Cancelled{By: "ann", Reason: "deploy"})
	if err != nil || got.Status != store.StatusRunning || !strings.Contains(got.Error, `cancel by ann held by Temporal: no worker is polling task queue "q-cli-noworker"`) {
		t.Fatalf("cancel with no worker: %+v %v, want held", got, err)
	}
	sv.addWorker()
	end, err := temporal.Result(ctx, b.(*onTemporal).c, "cli-unanswered")
	if err != nil || end.Status != store.StatusCancelled || !strings.Contains(end.Error, "ann") || !strings.Contains(end.Error, "deploy") {
		t.Fatalf("once a worker polls: %+v %v, want cancelled by ann for deploy", end, err)
	}
}

// TestServeTemporalRunsPaged: GET /api/v1/tasks pages through the runs
// going on on the cluster, then the stored tasks, with one cursor: with a
// limit below the runs going on, every run and task is listed once, no
// page longer than the limit, and a page exactly full of the last ones
// has no cursor; a cursor the server never gave is a 400.
func TestServeTemporalRunsPaged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sv := serveCluster(ctx, t, TemporalTarget{Queue: "q-serve-paged"})
	var res run.Result
	ids := []string{"paged-0", "paged-1", "paged-2", "paged-3"}
	for _, id := range ids {
		sv.call("POST", "/api/v1/runs", map[string]any{"pipeline": "email-triage", "id": id, "input": sv.f.input}, 200, &res)
	}
	// A page exactly full of the last runs, none stored: no cursor to an
	// empty page.
	var full serve.TaskPage
	sv.call("GET", "/api/v1/tasks?limit=4", nil, 200, &full)
	if len(full.Tasks) != 4 || full.NextCursor != "" {
		t.Fatalf("a page of 4 over the 4 runs going on lists %d with cursor %q, want all 4 and no cursor", len(full.Tasks), full.NextCursor)
	}
	// One ends, and is then the store's.
	sv.call("POST", "/api/v1/tasks/paged-0/resume", map[string]any{"answers": map[string]any{"answer": "yes"}}, 200, &res)
	if res.Status != store.StatusCompleted {
		t.Fatalf("paged-0 answered: %+v", res)
	}
	var seen []string
	cursor, pages := "", 0
	for {
		var page serve.TaskPage
		sv.call("GET", "/api/v1/tasks?limit=2&cursor="+url.QueryEscape(cursor), nil, 200, &page)
		if pages++; len(page.Tasks) > 2 || pages > 10 {
			t.Fatalf("page %d lists %d tasks (limit 2)", pages, len(page.Tasks))
		}
		for _, r := range page.Tasks {
			seen = append(seen, r.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, slices.Compact(slices.Clone(seen))) || !slices.Equal(seen, ids) {
		t.Fatalf("%d pages of 2 list %v, want %v each once", pages, seen, ids)
	}
	var stored serve.TaskPage
	sv.call("GET", "/api/v1/tasks?cursor=t~", nil, 200, &stored)
	if len(stored.Tasks) != 1 || stored.Tasks[0].ID != "paged-0" {
		t.Fatalf("the stored tasks' first page lists %+v, want paged-0 alone", stored.Tasks)
	}
	for _, bad := range []string{"t~bm90LWEtdG9rZW4", "t~!!", "t~" + base64.RawURLEncoding.EncodeToString([]byte(`{"LastCloseTime":"x"}`))} {
		var refused struct {
			Error serve.Error `json:"error"`
		}
		sv.call("GET", "/api/v1/tasks?limit=2&cursor="+url.QueryEscape(bad), nil, 400, &refused)
		if refused.Error.Code != serve.CodeBadRequest || !strings.Contains(refused.Error.Message, "cursor") {
			t.Fatalf("cursor %q: %+v, want a 400 naming the cursor", bad, refused.Error)
		}
	}
}
