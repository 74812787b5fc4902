package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// treeFixture is a task with one execution: a routine span whose children
// (out of order) are a chat, a tool call that ran, one refused and one
// that started and never finished, and a human step.
func treeFixture() (*store.Tree, []*store.Recording) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	span := func(seq uint64, id, parent, name string, d time.Duration, attrs store.Attributes) store.Span {
		return store.Span{Seq: seq, SpanID: id, ParentSpanID: parent, Name: name, Start: t0, End: t0.Add(d), Attributes: attrs}
	}
	tree := &store.Tree{
		Task: store.Task{ID: "t1", Status: store.StatusWaiting, Pipeline: "triage",
			Strategy: store.StrategyRef{Name: "handler", Version: "1.0.0"}, Tags: []string{"smoke", "ci"},
			Waits: []store.Wait{{Kind: store.WaitHuman, Node: "ask", Question: "ok?"}},
			Input: json.RawMessage(`{"subject":"` + strings.Repeat("x", 210) + `"}`)},
		Executions: []store.ExecutionTree{{
			Execution: store.Execution{ID: "e1", Mode: "live", Status: store.StatusFailed, Error: "boom"},
			Spans: []store.Span{
				span(1, "r", "", "routine", time.Second, nil),
				span(4, "h", "r", "ask", 0, store.Attributes{"sextant.node": store.String("ask"), "sextant.step.kind": store.String("human")}),
				span(2, "c", "r", "chat", 1500*time.Microsecond, store.Attributes{
					"sextant.recording":              store.String("chat1"),
					store.AttrGenAIUsageInputTokens:  store.Int(12),
					store.AttrGenAIUsageOutputTokens: store.Int(3),
					"sextant.cost_usd":               store.Float(0.00125),
					"sextant.recorded":               store.Bool(true),
				}),
				span(3, "x", "r", "execute_tool lookup", 2*time.Millisecond, store.Attributes{
					store.AttrGenAIOperationName: store.String("execute_tool"),
					"gen_ai.tool.name":           store.String("drop"),
					"sextant.tool.source":        store.String("db"),
					"gen_ai.tool.call.arguments": store.String(`{"t":"users"}`),
					"gen_ai.tool.call.result":    store.String("error: never_execute"),
				}),
				span(5, "k", "r", "tool", 3*time.Millisecond, store.Attributes{"sextant.recording": store.String("tool1")}),
				{Seq: 6, SpanID: "o", ParentSpanID: "gone", Name: "orphan", Start: t0, Status: store.SpanStatus{Code: store.CodeError, Message: "lost"}},
			},
		}},
		Rewards: []store.Reward{{Seq: 1, Value: 0.5, Tags: []string{"good"}, Note: "fine"}, {Seq: 2, Value: -1, SpanID: "c"}},
	}
	calls := []*store.Recording{
		{Hash: "chat1", Kind: store.RecordChat,
			Request:  json.RawMessage(`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi\nthere"}]}`),
			Response: json.RawMessage(`{"text":"","tool_calls":[{"name":"db.lookup","arguments":{}}]}`)},
		{Hash: store.ToolApprovalKey("tool1", "confirm"), Kind: store.RecordHuman,
			Request: json.RawMessage(`{"prompt":"run lookup?"}`), Response: json.RawMessage(`{"answer":"yes"}`)},
		{Hash: "tool1", Kind: store.RecordTool,
			Request:  json.RawMessage(`{"source":"db","tool":"lookup","arguments":{"id":1},"n":2}`),
			Response: json.RawMessage(`{"content":"found","is_error":false,"structured":{"id":1}}`)},
		{Hash: "ans", Kind: store.RecordHuman, Request: json.RawMessage(`{"step":"ask","prompt":"ok?"}`), Response: json.RawMessage(`yes`)},
		{Hash: "list", Kind: store.RecordToolList, Request: json.RawMessage(`{"source":"db"}`), Response: json.RawMessage(`[{"name":"lookup"},{"name":"drop"}]`)},
		{Hash: "st", Kind: store.RecordToolStarted, Request: json.RawMessage(`{"source":"db","tool":"slow","arguments":{},"n":1}`), Response: json.RawMessage(`{"call":"never"}`)},
		{Hash: "st2", Kind: store.RecordToolStarted, Request: json.RawMessage(`{"source":"db","tool":"lookup","arguments":{"id":1},"n":2}`), Response: json.RawMessage(`{"call":"tool1"}`)},
	}
	return tree, calls
}

const treeSpans = `
execution e1  live  failed  error: boom
  routine                                    1s  span r
    chat                                  1.5ms  in 12  out 3  $0.0013  recorded  span c
    execute_tool lookup                     2ms  span x
    ask                                      0s  span h
    tool                                    3ms  span k
  orphan                                      …  span o  ERROR: lost
`

const treeRewards = `
rewards:
  #1 +0.5 good fine
  #2 -1 span c  
`

func TestWriteTree(t *testing.T) {
	header := "task t1  waiting  pipeline triage  strategy handler 1.0.0\ntags: smoke, ci\nwaiting for answer at ask: ok?\n"
	input := `input: {"subject":"` + strings.Repeat("x", 188) + "…\n"
	tests := []struct {
		name string
		opt  func(calls []*store.Recording) TreeOptions
		want string
	}{
		{"spans only", func([]*store.Recording) TreeOptions { return TreeOptions{} }, header + input + treeSpans + treeRewards},
		{"operated", func([]*store.Recording) TreeOptions {
			return TreeOptions{Operated: func(w io.Writer, t *store.Task) { fmt.Fprintf(w, "hint for %s\n", t.ID) }}
		}, header + "hint for t1\n" + input + treeSpans + treeRewards},
		{"full", func(calls []*store.Recording) TreeOptions { return TreeOptions{Calls: calls} }, header + input + `
execution e1  live  failed  error: boom
  routine                                    1s  span r
    chat                                  1.5ms  in 12  out 3  $0.0013  recorded  span c
        system: be brief
        user: hi
              there
        calls: db.lookup({})
    execute_tool lookup                     2ms  span x
        tool: db.drop({"t":"users"})
        error: never_execute
    ask                                      0s  span h
        asked: ok?
        answer: yes
    tool                                    3ms  span k
        asked: run lookup?
        answer: {"answer":"yes"}
        tool: db.lookup({"id":1}) #2
        result: found
        structured: {"id":1}
  orphan                                      …  span o  ERROR: lost

tool recordings:
  tools of db: lookup, drop
  started: db.slow({}) — no result was recorded: the run stopped during the call
` + treeRewards},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, calls := treeFixture()
			var b bytes.Buffer
			WriteTree(&b, tree, tt.opt(calls))
			if b.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tt.want)
			}
		})
	}
}

// TestWriteCallUndecodable: a recording that does not decode as its kind
// is shown raw, not dropped.
func TestWriteCallUndecodable(t *testing.T) {
	for _, kind := range []store.RecordingKind{store.RecordChat, store.RecordTool} {
		var b bytes.Buffer
		writeCall(&b, "  ", &store.Recording{Kind: kind, Request: json.RawMessage(`[1]`), Response: json.RawMessage(`"x"`)})
		if want := "  request: [1]\n  response: \"x\"\n"; b.String() != want {
			t.Errorf("%s: got %q, want %q", kind, b.String(), want)
		}
	}
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{{"", 3, ""}, {"abc", 3, "abc"}, {"abcd", 3, "abc…"}, {"ééé", 2, "éé…"}} {
		if got := Clip(tt.in, tt.n); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// TestWriteTreeControls: what a model, a tool or an OTLP client wrote
// reaches the terminal (show, incidents) with its control characters shown escaped, never
// as the escape sequences they would be (a window title, a cleared
// screen, a C1 CSI, a raw 0x9b byte, a carriage return overwriting the
// line); newlines and tabs stay.
func TestWriteTreeControls(t *testing.T) {
	tree, calls := treeFixture()
	tree.Task.Tags = []string{"x\x1b[8m"}
	tree.Executions[0].Spans[5].Status.Message = "lost\x07"
	for _, c := range calls {
		if c.Hash == "tool1" {
			c.Response = json.RawMessage(`{"content":"a\u001b]0;PWNED\u0007b\tc\u001b[2J\u009b31md\re\nf","is_error":false}`)
		}
		if c.Hash == "chat1" {
			c.Response = []byte("{\"text\":\"raw \x9b31m\"}")
		}
	}
	var b bytes.Buffer
	WriteTree(&b, tree, TreeOptions{Calls: calls})
	out := b.String()
	for i, r := range out {
		if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f {
			t.Fatalf("control character %U at %d reached the terminal:\n%q", r, i, out)
		}
	}
	var inc bytes.Buffer
	if err := WriteIncidents(&inc, []store.Task{{ID: "t1", Pipeline: "p", Incident: &store.Incident{Kind: "tool", Node: "ask", Error: "tools.x: \x1b]52;c;cHduZWQ=\x07"}}}); err != nil {
		t.Fatal(err)
	}
	if got := inc.String(); strings.ContainsRune(got, 0x1b) || !strings.Contains(got, `tools.x: \x1b]52;c;cHduZWQ=\x07`) {
		t.Errorf("incidents: %q, want the error's controls escaped", got)
	}
	for _, want := range []string{`result: a\x1b]0;PWNED\x07b` + "\tc" + `\x1b[2J\u009b31md\x0de` + "\n", `tags: x\x1b[8m`, `ERROR: lost\x07`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
