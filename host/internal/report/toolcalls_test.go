package report

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// toolsReport is a candidate that forbids an agent refunds: flipped tasks
// whose tool calls differ (blocked by policy, declined by a person, a
// tool error, fewer calls), one flipped task without tool calls, more
// flipped tasks with calls than the text and Markdown show, and text that
// needs escaping.
func toolsReport() *Report {
	get := func(id string) ToolCall {
		return ToolCall{Source: "shop", Tool: "get", Arguments: `{"id":"` + id + `"}`, Decision: "recorded",
			Result: `{"carrier":"GLS","id":"` + id + `","status":"lost","total":64.9}`}
	}
	refund := func(id string) ToolCall {
		return ToolCall{Source: "shop", Tool: "submit", Arguments: `{"details":{"amount":64.9,"currency":"EUR"},"id":"` + id + `","kind":"refund","note":"parcel lost by GLS"}`,
			Decision: "recorded", Result: "filed refund request REQ-0A1B2C3D4E for id " + id}
	}
	blocked := func(id string) ToolCall {
		c := refund(id)
		c.Decision, c.Result = "blocked", ""
		c.Error = `error: blocked by policy: shop.submit(` + c.Arguments + `) matches "tool:shop.submit(kind=refund)" in constraints.never_execute`
		return c
	}
	r := &Report{
		Pipeline:    "support-agent",
		Baseline:    Strategy{Name: "support-policy", Version: "1.0.0", Hash: "5d41402abc4b2a76b9719d911017c592aa3f0c1b2d3e4f5a6b7c8d9e0f1a2b3c"},
		Candidate:   Strategy{Name: "support-policy", Version: "1.1.0", Hash: "7c211433f02071597741e6ff5a8ea34789abad3c2d1e0f9a8b7c6d5e4f3a2b1c"},
		Tasks:       12,
		Fidelity:    1,
		SelfReplays: 12,
		MinFidelity: 1,
		Metrics: []sdk.Metric{
			{Name: "success_rate", Kind: "binary", Baseline: 0.9166666666666666, Candidate: 0.5, Effect: -0.4166666666666667,
				CILow: -0.6666666666666666, CIHigh: -0.16666666666666666, Confidence: 0.95, P: 0.0039, N: 12, HigherIsBetter: true},
		},
		Gates: []GateResult{
			{Name: "constraints", Ruling: sdk.Fail, Reasons: []string{"candidate replays broke constraints 6 times in 6 of 12 tasks"}},
		},
		Ruling:   sdk.Fail,
		ExitCode: 1,
	}
	for i := range 7 {
		id := fmt.Sprintf("A10%02d", i)
		task := fmt.Sprintf("lost-%02d", i)
		r.Regressed = append(r.Regressed, task)
		f := Flip{Task: task, Metric: "success_rate", From: "pass", To: "fail",
			Baseline: []ToolCall{get(id), refund(id)}, Candidate: []ToolCall{get(id), blocked(id)}}
		r.Flipped = append(r.Flipped, f)
	}
	// A person declined the call; a tool answered an error; a model that
	// asked for a tool the step does not offer, with text to escape.
	r.Regressed = append(r.Regressed, "big-refund", "unknown", "odd")
	declined := refund("B2000")
	declined.Arguments = strings.Replace(declined.Arguments, "64.9", "420", 1)
	declined.Decision, declined.Result, declined.Error = "declined", "", "error: a person declined this call; it was not run"
	approved := declined
	approved.Decision, approved.Result, approved.Error = "recorded", "filed refund request REQ-9F8E7D6C5B for id B2000", ""
	r.Flipped = append(r.Flipped,
		Flip{Task: "big-refund", Metric: "success_rate", From: "pass", To: "fail",
			Baseline: []ToolCall{get("B2000"), approved}, Candidate: []ToolCall{get("B2000"), declined}},
		Flip{Task: "unknown", Metric: "success_rate", From: "pass", To: "fail",
			Baseline: []ToolCall{{Source: "shop", Tool: "get", Arguments: `{"id":"Z9"}`, Decision: "recorded", Error: `no record with id "Z9"`}},
			Candidate: []ToolCall{{Source: "shop", Tool: "get", Arguments: `{"id":"Z9"}`, Decision: "recorded", Error: `no record with id "Z9"`},
				{Source: "shop", Tool: "search", Arguments: `{"query":"Z9"}`, Decision: "executed", Result: `{"records":[],"total":0}`}}},
		Flip{Task: "odd", Metric: "success_rate", From: "pass", To: "fail",
			Baseline: []ToolCall{{Tool: "rm|rf`<b>`", Arguments: `"not | json *at* all"`, Decision: "refused",
				Error: `error: there is no tool "rm|rf` + "`<b>`" + `" here; the tools are: get, submit`}},
			Candidate: nil},
		Flip{Task: "plain", Metric: "success_rate", From: "fail", To: "pass"})
	r.Regressed = append(r.Regressed, "plain")
	return r
}

// TestToolCallsSideBySide checks what each format shows of the flipped
// tasks' tool calls: both sides of a call, a blocked or declined call
// named as such, caps, and escaping.
func TestToolCallsSideBySide(t *testing.T) {
	r := toolsReport()
	text := string(render(t, func(w io.Writer, r *Report) error { return WriteText(w, r) }, r))
	for _, want := range []string{
		"tool calls of flipped tasks (10), baseline 1.0.0 beside candidate 1.1.0:",
		"  big-refund success_rate: pass->fail",
		`    2  shop.submit({"details":{"amount":420,"currency":"EUR"},…  |  shop.submit({"details":{"amount":420,"currency":"EUR"},…`,
		"       → filed refund request REQ-9F8E7D6C5B for id B2000        |  → declined by a person\n",
		`|  → blocked by policy: matches "tool:shop.submit(kind=ref…`,
		"  … and 5 more",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}

	md := string(render(t, WriteMarkdown, r))
	for _, want := range []string{
		"### Tool calls of flipped tasks (10)",
		"#### `lost-00`: `success_rate` pass → fail",
		"| # | Baseline 1.0.0 | Candidate 1.1.0 |",
		"| 2 | `shop.submit({\"details\":{\"amount\":64.9,\"currency\":\"EUR\"},\"id\":\"A1000\",\"kind\":\"refund\",\"note\":\"parcel lost by GLS\"})`<br>filed refund request REQ-0A1B2C3D4E for id A1000 | " +
			"`shop.submit({\"details\":{\"amount\":64.9,\"currency\":\"EUR\"},\"id\":\"A1000\",\"kind\":\"refund\",\"note\":\"parcel lost by GLS\"})`<br>**blocked by policy: matches \"tool:shop.submit(kind=refund)\" in constraints.never\\_execute** |",
		"<br>**declined by a person** |",
		"| 2 | - | `shop.search({\"query\":\"Z9\"})`",
		"`` rm\\|rf`<b>`(\"not \\| json *at* all\") ``",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown report lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "#### "); n != mdMaxToolFlips {
		t.Errorf("markdown shows %d flipped tasks' calls, want %d", n, mdMaxToolFlips)
	}

	html := string(render(t, WriteHTML, r))
	for _, want := range []string{
		"<h2>Tool calls of flipped tasks (10)</h2>",
		`<tr><td class="num">2</td><td><code>shop.submit({&#34;details&#34;:{&#34;amount&#34;:420,`,
		`<span class="blocked">declined by a person</span></td></tr>`,
		`<span class="blocked">blocked by policy: matches &#34;tool:shop.submit(kind=refund)&#34; in constraints.never_execute</span>`,
		`<td class="muted">-</td>`,
		"rm|rf`&lt;b&gt;`",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("html report lacks %q", want)
		}
	}

	var raw struct {
		Flipped []map[string]json.RawMessage
	}
	b := render(t, WriteJSON, r)
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	sides := map[string][2]string{}
	for _, f := range raw.Flipped {
		var task string
		if err := json.Unmarshal(f["task"], &task); err != nil {
			t.Fatal(err)
		}
		sides[task] = [2]string{string(f["baseline_tool_calls"]), string(f["candidate_tool_calls"])}
	}
	if s := sides["plain"]; s[0] != "" || s[1] != "" {
		t.Errorf("a flipped task without tool calls has them in JSON: %q", s)
	}
	var cand []map[string]string
	if err := json.Unmarshal([]byte(sides["lost-03"][1]), &cand); err != nil || len(cand) != 2 {
		t.Fatalf("lost-03's candidate calls: %v %s", err, sides["lost-03"][1])
	}
	if c := cand[1]; c["source"] != "shop" || c["tool"] != "submit" || c["decision"] != "blocked" || c["result"] != "" ||
		!strings.HasPrefix(c["error"], "error: blocked by policy: ") || !strings.Contains(c["arguments"], `"kind":"refund"`) {
		t.Errorf("lost-03's blocked call in JSON: %v", c)
	}

	// No writer changes the calls.
	before := toolsReport()
	for _, f := range goldenFormats {
		render(t, f.write, r)
	}
	if !reflect.DeepEqual(r, before) {
		t.Fatal("a writer changed the report")
	}
}
