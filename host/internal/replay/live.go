package replay

import (
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// LiveCall is one call a replay sent to a live provider or tool source
// because it had no recording (on_miss = "live").
type LiveCall struct {
	// Step is the routine node whose step made the call; "" for a call
	// made after the run, such as a rubric's judge.
	Step string `json:"step,omitempty"`
	// Kind is "chat" for a model call, "tool" for a tool call.
	Kind string `json:"kind"`
	// Provider is the [providers] block of a chat call; Name its model,
	// or the tool's name.
	Provider string  `json:"provider,omitempty"`
	Name     string  `json:"name,omitempty"`
	CostUSD  float64 `json:"cost_usd,omitempty"`
}

// LiveCalls are the calls among a replayed execution's spans that were not
// answered from a recording, in span order.
func LiveCalls(spans []store.Span) []LiveCall {
	steps := map[string]string{} // span id → node of the step span
	for _, sp := range spans {
		if n, ok := sp.LookupAttr("sextant.node"); ok {
			steps[sp.SpanID] = n.Str()
		}
	}
	var out []LiveCall
	for _, sp := range spans {
		rec, ok := sp.LookupAttr("sextant.recorded")
		if !ok || rec.Bool() {
			continue
		}
		c := LiveCall{Step: steps[sp.ParentSpanID], Kind: "chat", CostUSD: sp.Attr("sextant.cost_usd").Float(),
			Provider: sp.Attr(store.AttrSextantProvider).Str(), Name: sp.Attr(store.AttrGenAIRequestModel).Str()}
		if tool, ok := sp.LookupAttr(run.AttrGenAIToolName); ok {
			c.Kind, c.Name = "tool", tool.Str()
		}
		out = append(out, c)
	}
	return out
}
