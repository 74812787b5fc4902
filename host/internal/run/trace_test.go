package run

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestTraceArena: a run's trace, its call entries written into one
// arena checkpoint after checkpoint, is TraceOf its spans, entries
// written earlier unchanged as the arena fills and starts anew.
func TestTraceArena(t *testing.T) {
	var all, trace []string
	var arena textArena
	var spans []store.Span
	for i := range 199 { // enough calls to fill a piece of the arena
		step := []store.Span{{Seq: uint64(2 * i), Name: fmt.Sprintf("step s%d", i)},
			{Seq: uint64(2*i + 1), Kind: store.SpanClient, Attributes: store.Attributes{
				"sextant.request_hash": store.String(fmt.Sprintf("%012x%052x", i*7919+1, i))}}}
		if i%3 == 0 { // a graded call is no part of the trace
			step[1].Attributes[AttrScore] = store.Bool(true)
		}
		spans = append(spans, step...)
		trace = appendTrace(trace, step, &arena)
		all = append(all, slices.Clone(trace)...)
		if want := TraceOf(spans); !slices.Equal(trace, want) {
			t.Fatalf("after %d steps: %q, want %q", i+1, trace, want)
		}
	}
	if len(all) == 0 || trace[len(trace)-2] != fmt.Sprintf("call %012x", 197*7919+1) {
		t.Fatalf("trace %q", trace)
	}
}
