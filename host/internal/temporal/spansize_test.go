package temporal

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// TestSpanSizeNearJSON: the size the workflow counts toward
// DefaultSpanBytes stays within a factor of two of the span's JSON, for
// small and large spans, so staging by size still bounds a payload.
func TestSpanSizeNearJSON(t *testing.T) {
	long := strings.Repeat("a reply of some length. ", 400)
	base := store.Span{Task: "01JTASK", Execution: "01a2243e-90f7-7b4a-b19a-df6aec394500", Seq: 12,
		TraceID: "01d63abc42d4133825817db3529e38a3", SpanID: "770d20bfb0821b26", ParentSpanID: "ec9e2a2098126b57",
		Name: "chat", Kind: "client", Start: time.Unix(1700000000, 123456789).UTC(), End: time.Unix(1700000001, 0).UTC(),
		Status: store.SpanStatus{Code: "ok"}}
	bare := base
	small := base
	small.Attributes = store.Attributes{"gen_ai.operation.name": store.String("chat"), "gen_ai.usage.input_tokens": store.Int(6),
		"sextant.cost_usd": store.Float(0.25), "sextant.recorded": store.Bool(false),
		"gen_ai.response.finish_reasons": store.Strings("stop")}
	large := small
	large.Attributes = store.Attributes{"gen_ai.output": store.String(long), "gen_ai.input": store.String(long)}
	large.Links = []store.Link{{TraceID: base.TraceID, SpanID: base.SpanID, Attributes: store.Attributes{"why": store.String("replayed")}}}
	for name, sp := range map[string]store.Span{"bare": bare, "small": small, "large": large} {
		b, err := json.Marshal(sp)
		if err != nil {
			t.Fatal(err)
		}
		if got := spanSize(&sp, true); got < len(b)/2 || got > 2*len(b) {
			t.Errorf("%s: spanSize %d, JSON %d bytes", name, got, len(b))
		}
	}
}

// TestSpanSizeEscapes: text that encoding/json escapes (markup, control
// characters, invalid UTF-8, line separators) counts as its JSON does
// from versionSpanEscapes, within a factor of two, where counting its
// bytes (runs begun before) is up to six times short.
func TestSpanSizeEscapes(t *testing.T) {
	for name, s := range map[string]string{
		"markup":       strings.Repeat("<b>&amp;</b>\n", 1000),
		"control":      strings.Repeat("\x01\x1f", 4000),
		"invalid utf8": strings.Repeat("\xff", 8000),
		"separators":   strings.Repeat("\u2028\u2029\"\\", 2000),
		"non-ASCII":    strings.Repeat("日本語のテキスト", 1000),
	} {
		sp := store.Span{Name: "chat", Kind: "client", Status: store.SpanStatus{Code: "error", Message: s},
			Attributes: store.Attributes{"gen_ai.output": store.String(s), "tags": store.Strings(s, s)}}
		b, err := json.Marshal(sp)
		if err != nil {
			t.Fatal(err)
		}
		if got := spanSize(&sp, true); got < len(b)/2 || got > 2*len(b) {
			t.Errorf("%s: spanSize %d, JSON %d bytes", name, got, len(b))
		}
	}
}

// TestSpanSizeTypedCall: a provider call's span made in this process
// (its attributes in Call) counts as the span the workflow decodes from
// its JSON (all of them in its map), so the staging decision the
// workflow replays is the same.
func TestSpanSizeTypedCall(t *testing.T) {
	temp := 0.5
	c := &store.CallAttributes{Block: "default", OutputType: "json", Server: "api.<x>.com", Port: 443, HasServer: true,
		RequestHash: "ab12", Recording: "r/ab12", Recorded: true, CostUSD: 0.001, LatencyMS: 12, Cited: []string{"b-1", "b\u2028"}}
	c.SetChat("openai", &sdk.ChatRequest{Model: "gpt", Temperature: &temp, MaxTokens: 9, Stop: []string{"\n"}},
		&sdk.ChatResponse{Model: "gpt-1", ID: "id", FinishReason: "stop", Usage: sdk.Usage{InputTokens: 3, OutputTokens: 4}})
	sp := store.Span{Task: "01JTASK", Execution: "e1", Seq: 2, Name: "chat gpt", Kind: "client",
		Start: time.Unix(1700000000, 0).UTC(), End: time.Unix(1700000001, 0).UTC(), Call: c,
		Attributes: store.Attributes{"sextant.score": store.Bool(true)}}
	b, err := json.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	var decoded store.Span
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	if len(decoded.Attributes) != 22 {
		t.Fatalf("decoded %d attributes, want 22: %s", len(decoded.Attributes), b)
	}
	for _, escapes := range []bool{false, true} {
		if got, want := spanSize(&sp, escapes), spanSize(&decoded, escapes); got != want {
			t.Errorf("escapes %v: spanSize %d, decoded %d", escapes, got, want)
		}
	}
}
