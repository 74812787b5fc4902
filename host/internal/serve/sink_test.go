package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestSinkStagesSpans: a worker stages a running run's spans through the
// sink route; they stay out of sight until the run is recorded, then are
// its spans with the record's own; a span the store refuses is a 400.
func TestSinkStagesSpans(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithSyncCheckpoints(false))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mux := http.NewServeMux()
	for pattern, h := range serve.SinkHandlers(st) {
		mux.Handle(pattern, h)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	k := serve.NewSink(srv.URL, "", nil)

	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	span := func(seq uint64) store.Span {
		return store.Span{Task: "long", Execution: "e1", Seq: seq, Name: "step", Kind: store.SpanInternal,
			Start: t0.Add(time.Duration(seq) * time.Second), End: t0.Add(time.Duration(seq)*time.Second + time.Millisecond)}
	}
	if err := k.StageSpans(ctx, []store.Span{span(1), span(2), span(3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Task(ctx, "long"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("task of staged spans: %v, want not found", err)
	}
	strat := store.StrategyRef{Name: "s", Version: "1.0.0", Hash: "abc"}
	rec := &run.RunRecord{
		Task:      store.Task{ID: "long", Pipeline: "p", Input: json.RawMessage(`{}`), Status: store.StatusCompleted, Strategy: strat},
		Execution: store.Execution{Task: "long", ID: "e1", Mode: "live", Strategy: strat, Status: store.StatusCompleted, Started: t0, Ended: t0.Add(time.Minute)},
		State:     []byte(`{}`),
		Spans:     []store.Span{span(4)},
	}
	if err := k.RecordRun(ctx, rec); err != nil {
		t.Fatal(err)
	}
	tree, err := st.Tree(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if got := tree.Executions[0].Spans; len(got) != 4 || got[0].Seq != 1 || got[3].Seq != 4 {
		t.Errorf("recorded run has spans %+v, want the three staged and the record's", got)
	}

	var ae *serve.APIError
	if err := k.StageSpans(ctx, []store.Span{span(0)}); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Errorf("staging a span without seq: %v, want a 400", err)
	}
}
