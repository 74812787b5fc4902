//go:build !notemporal

package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// TestServeOperatesTemporalRuns: a sextant serve with --temporal shows a
// run going on on the cluster, which its store lacks, lists it, answers
// it and cancels it through the Temporal backend; the cancelled run is
// then the store's, recorded with who and why, and a second cancel, like
// one of a task nobody has, is refused.
func TestServeOperatesTemporalRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := temporaltest.Start(t)
	f := newFixture(t)
	st, err := store.Open(ctx, f.store, store.NewConfig().WithLogger(quiet()).WithSyncCheckpoints(false))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tt := TemporalTarget{Addr: srv.HostPort, Namespace: srv.Namespace, Queue: "q-serve"}
	m, closeAll, err := temporal.LoadPipelines(ctx, filepath.Dir(filepath.Dir(f.pipeline)), temporal.StoreSink(st), prepare, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(ctx)
	w, err := temporal.NewWorker(srv.Dial(t), temporal.WorkerOptions{TaskQueue: tt.Queue, Pipelines: m, Sink: temporal.StoreSink(st)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cl, err := ServeCluster(tt, options())(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s, err := serve.New(serve.Options{Store: st, Prepare: prepare, Logger: quiet(), Cluster: cl})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	call := func(method, path string, body any, want int, out any) {
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
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatal(err)
			}
		}
	}

	b := open(t, Target{Temporal: tt})
	for _, id := range []string{"on-temporal", "answered"} {
		prep, err := prepare(ctx, f.pipeline)
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.Run(ctx, RunRequest{Prep: prep, Input: run.Input{ID: id, Input: f.input}})
		prep.Close(ctx)
		if err != nil || res.Status != store.StatusWaiting {
			t.Fatalf("run %s on Temporal: %+v, %v; want waiting for a person", id, res, err)
		}
	}
	var d struct {
		Task store.Task `json:"task"`
	}
	call("GET", "/api/v1/tasks/on-temporal", nil, 200, &d)
	if d.Task.Status != store.StatusWaiting || d.Task.Pipeline != "email-triage" || len(d.Task.Waits) == 0 || d.Task.Waits[0].Kind != store.WaitHuman {
		t.Fatalf("a run waiting on Temporal shows as %+v", d.Task)
	}
	var page struct {
		Tasks []store.Task `json:"tasks"`
	}
	call("GET", "/api/v1/tasks?status=running", nil, 200, &page)
	if len(page.Tasks) != 2 {
		t.Fatalf("listed %+v, want the two runs going on on Temporal", page.Tasks)
	}

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
	call("GET", "/api/v1/tasks?status=running", nil, 200, &page)
	if len(page.Tasks) != 0 {
		t.Fatalf("listed %+v once both runs ended", page.Tasks)
	}
}
