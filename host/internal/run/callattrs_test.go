package run_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestCallSpanTypedAttributes: a run's provider-call spans carry their
// attributes as fields (Span.Call), not a map, and every reader sees the
// attributes the store reads back.
func TestCallSpanTypedAttributes(t *testing.T) {
	ctx := context.Background()
	prep := prepare(t, "testdata/chain10/pipeline.toml")
	st, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	live := map[string]store.Span{} // by execution and seq
	r := prep.Runner(run.Config{Store: st, OnSpans: func(spans []store.Span) {
		mu.Lock()
		defer mu.Unlock()
		for _, sp := range spans {
			live[fmt.Sprint(sp.Execution, sp.Seq)] = sp
		}
	}})
	for _, topic := range []string{"one", "two"} {
		res, err := r.Start(ctx, run.Input{Input: map[string]any{"topic": topic}})
		if err != nil || res.Status != store.StatusCompleted {
			t.Fatalf("run: %v %+v", err, res)
		}
		stored, err := st.Spans(ctx, res.Task, res.Execution)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		for _, want := range stored {
			mu.Lock()
			sp, ok := live[fmt.Sprint(want.Execution, want.Seq)]
			mu.Unlock()
			if !ok {
				t.Fatalf("span %d was not exported", want.Seq)
			}
			if want.Kind != store.SpanClient {
				continue
			}
			calls++
			if sp.Call == nil || sp.Attributes != nil {
				t.Fatalf("call span %d: Call %v, map %v", sp.Seq, sp.Call, sp.Attributes)
			}
			if got := sp.AllAttributes(); !reflect.DeepEqual(got, want.Attributes) {
				t.Fatalf("call span %d: %v, stored %v", sp.Seq, got, want.Attributes)
			}
			if v, ok := sp.LookupAttr(store.AttrRecorded); !ok || v.Bool() || sp.Attr(store.AttrRecording).Str() == "" {
				t.Fatalf("call span %d: recorded %v %v, want false", sp.Seq, v, ok)
			}
		}
		if calls != 5 {
			t.Fatalf("%d call spans, want 5", calls)
		}
	}
}
