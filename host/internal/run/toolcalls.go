package run

import (
	"encoding/json"
	"sort"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/tool"
)

// ToolCall is one tool call of an execution as its execute_tool span
// tells it: what a judged replay shows, baseline beside candidate, for a
// task that flipped. Its texts are the span's: redacted as prompts are,
// and clipped to spanTextMax.
type ToolCall struct {
	// Source is the tool source ([tools.NAME]); "" for a call of a tool
	// the step does not offer.
	Source string `json:"source,omitempty"`
	Tool   string `json:"tool"`
	// Arguments are the call's arguments as canonical JSON (keys sorted),
	// or as the model wrote them when they are not JSON.
	Arguments string `json:"arguments"`
	// Decision is how the call was answered: executed, recorded (from its
	// recording), refused (not offered, bad arguments), blocked (by the
	// strategy's never_execute), declined (by a person) or failed.
	Decision string `json:"decision"`
	// Result is what the model was told when the call succeeded; Error
	// what it was told otherwise (a refusal, a block, a decline, the
	// tool's own error).
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ToolCallsOf lists the tool calls among spans, in sequence order.
func ToolCallsOf(spans []store.Span) []ToolCall {
	sorted := spans
	if !sort.SliceIsSorted(spans, func(i, j int) bool { return spans[i].Seq < spans[j].Seq }) {
		sorted = append([]store.Span(nil), spans...)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	}
	var out []ToolCall
	for _, sp := range sorted {
		a := sp.Attributes // a tool call's span has no Call
		if sp.Attr(store.AttrGenAIOperationName).Str() != "execute_tool" {
			continue
		}
		c := ToolCall{Source: a["sextant.tool.source"].Str(), Tool: a[AttrGenAIToolName].Str(),
			Arguments: canonicalText(a[AttrGenAIToolCallArguments].Str()), Decision: a["sextant.tool.decision"].Str()}
		text := a[AttrGenAIToolCallResult].Str()
		if sp.Status.Code == store.CodeError {
			c.Error = text
		} else {
			c.Result = text
		}
		out = append(out, c)
	}
	return out
}

// canonicalText is args with its keys sorted when it is JSON, else args:
// a span keeps the arguments as the model ordered them, and a clipped or
// non-JSON text is shown as it is.
func canonicalText(args string) string {
	b, err := tool.Canonical(json.RawMessage(args))
	if err != nil {
		return args
	}
	return string(b)
}
