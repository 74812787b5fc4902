package run

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
)

func toolSpanOf(seq uint64, source, name, args, decision, result string, failed bool) store.Span {
	a := store.Attributes{
		store.AttrGenAIOperationName: store.String("execute_tool"),
		AttrGenAIToolName:            store.String(name),
		AttrGenAIToolCallArguments:   store.String(args),
		AttrGenAIToolCallResult:      store.String(result),
		"sextant.tool.decision":      store.String(decision),
	}
	if source != "" {
		a["sextant.tool.source"] = store.String(source)
	}
	sp := store.Span{Seq: seq, Name: "execute_tool " + name, Attributes: a, Status: store.SpanStatus{Code: store.CodeOK}}
	if failed {
		sp.Status = store.SpanStatus{Code: store.CodeError, Message: result}
	}
	return sp
}

// TestToolCallsOf: the calls among spans in sequence order, arguments with
// their keys sorted (as written when not JSON), an error span's text as
// the error, other spans left out.
func TestToolCallsOf(t *testing.T) {
	spans := []store.Span{
		toolSpanOf(4, "shop", "submit", `{"kind":"refund","id":"A1"}`, "blocked", "error: blocked by policy: never", true),
		{Seq: 1, Name: "step resolve", Attributes: store.Attributes{}},
		toolSpanOf(2, "shop", "get", `{"id":"A1"}`, "executed", `{"status":"lost"}`, false),
		{Seq: 3, Name: "chat m", Kind: store.SpanClient, Attributes: store.Attributes{store.AttrGenAIOperationName: store.String("chat")}},
		toolSpanOf(5, "", "rm", `"not json" {`, "refused", `error: there is no tool "rm" here`, true),
	}
	want := []ToolCall{
		{Source: "shop", Tool: "get", Arguments: `{"id":"A1"}`, Decision: "executed", Result: `{"status":"lost"}`},
		{Source: "shop", Tool: "submit", Arguments: `{"id":"A1","kind":"refund"}`, Decision: "blocked", Error: "error: blocked by policy: never"},
		{Tool: "rm", Arguments: `"not json" {`, Decision: "refused", Error: `error: there is no tool "rm" here`},
	}
	if got := ToolCallsOf(spans); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if spans[0].Seq != 4 {
		t.Fatal("ToolCallsOf reordered its input")
	}
	if got := ToolCallsOf(spans[1:2]); got != nil {
		t.Fatalf("no tool span: %+v", got)
	}
}

// BenchmarkToolCallsOf is what a replayed task pays to list its calls: an
// agent's 20 spans, 6 of them tool calls.
func BenchmarkToolCallsOf(b *testing.B) {
	var spans []store.Span
	for i := range 20 {
		if i%3 == 2 {
			spans = append(spans, toolSpanOf(uint64(i), "shop", "get", fmt.Sprintf(`{"note":"n","id":"A%d"}`, i), "recorded", `{"status":"lost","total":64.9}`, false))
		} else {
			spans = append(spans, store.Span{Seq: uint64(i), Name: "chat m", Attributes: store.Attributes{store.AttrGenAIOperationName: store.String("chat")}})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(ToolCallsOf(spans)) != 6 {
			b.Fatal("calls")
		}
	}
}
