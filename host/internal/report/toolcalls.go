package report

import (
	"fmt"
	"strconv"
	"strings"
)

// ToolCall is one tool call a replayed task made, as a flipped task shows
// it beside the other strategy's.
type ToolCall struct {
	// Source is the tool source; "" for a tool the step did not offer.
	Source string
	Tool   string
	// Arguments are the call's arguments, canonical JSON when they are
	// JSON.
	Arguments string
	// Decision is how the call was answered: executed, recorded, refused,
	// blocked (by policy), declined (by a person) or failed.
	Decision string
	// Result is what the model was told when the call succeeded, Error
	// what it was told otherwise.
	Result string
	Error  string
}

// call is the call as written: source.tool(arguments).
func (c ToolCall) call() string {
	name := c.Tool
	if c.Source != "" {
		name = c.Source + "." + c.Tool
	}
	return name + "(" + c.Arguments + ")"
}

// outcome is what came of the call, for people: the result, or why the
// model was told an error.
func (c ToolCall) outcome() string {
	switch {
	case c.Decision == "blocked":
		why, ok := strings.CutPrefix(c.Error, "error: blocked by policy: ")
		if !ok || why == "" {
			return "blocked by policy"
		}
		// The reason names the call first; it stands beside it already.
		return "blocked by policy: " + strings.TrimPrefix(why, c.call()+" ")
	case c.Decision == "declined":
		return "declined by a person"
	case c.Error != "":
		if strings.HasPrefix(c.Error, "error: ") {
			return c.Error
		}
		return "error: " + c.Error
	}
	return c.Result
}

// outcomeClass says how an outcome is coloured: ok, blocked (by policy or
// a person) or error.
func (c ToolCall) outcomeClass() string {
	switch {
	case c.Decision == "blocked" || c.Decision == "declined":
		return "blocked"
	case c.Error != "":
		return "error"
	}
	return "ok"
}

// toolFlips are the flipped tasks with tool calls, sorted by task.
func toolFlips(fs []Flip) []Flip {
	var out []Flip
	for _, f := range sortedFlips(fs) {
		if len(f.Baseline) > 0 || len(f.Candidate) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// callPair is the i-th call of each side, nil where a side made fewer.
type callPair struct {
	N                   int
	Baseline, Candidate *ToolCall
}

// callPairs lines a flip's calls up by position: the first calls side
// by side, then the second, and so on.
func callPairs(f Flip) []callPair {
	out := make([]callPair, max(len(f.Baseline), len(f.Candidate)))
	for i := range out {
		out[i].N = i + 1
		if i < len(f.Baseline) {
			out[i].Baseline = &f.Baseline[i]
		}
		if i < len(f.Candidate) {
			out[i].Candidate = &f.Candidate[i]
		}
	}
	return out
}

// How much of the flipped tasks' tool calls each format shows.
const (
	textMaxToolFlips  = 5
	textToolCellRunes = 56
	mdMaxToolFlips    = 10
	mdMaxToolCalls    = 20
	mdToolTextRunes   = 200
	htmlMaxToolFlips  = 50
	htmlToolTextRunes = 2000
)

// toolCalls writes the flipped tasks' tool calls in two columns,
// baseline beside candidate: a line for each call, and under it a line
// for what the model was told.
func (t *textWriter) toolCalls(r *Report) {
	fs := toolFlips(r.Flipped)
	if len(fs) == 0 {
		return
	}
	t.printf("\ntool calls of flipped tasks (%d), baseline %s beside candidate %s:\n", len(fs), r.Baseline.Version, r.Candidate.Version)
	call := func(c *ToolCall) string {
		if c == nil {
			return "-"
		}
		return truncate(c.call(), textToolCellRunes)
	}
	outcome := func(c *ToolCall) string {
		if c == nil {
			return ""
		}
		return truncate("→ "+c.outcome(), textToolCellRunes)
	}
	for i, f := range fs {
		if i == textMaxToolFlips {
			t.printf("  … and %d more\n", len(fs)-i)
			break
		}
		t.printf("  %s %s: %s->%s\n", f.Task, f.Metric, f.From, f.To)
		var rows [][]string
		var sides [][2]*ToolCall
		for _, p := range callPairs(f) {
			rows = append(rows, []string{"    " + strconv.Itoa(p.N), call(p.Baseline), "|", call(p.Candidate)},
				[]string{"", outcome(p.Baseline), "|", outcome(p.Candidate)})
			sides = append(sides, [2]*ToolCall{p.Baseline, p.Candidate}, [2]*ToolCall{p.Baseline, p.Candidate})
		}
		t.table([]string{"", "", "", ""}, rows, []bool{true}, func(row, col int) string {
			if row%2 == 0 || col%2 == 0 {
				return ""
			}
			if c := sides[row][col/2]; c != nil && c.outcomeClass() != "ok" {
				return ansiRed
			}
			return ""
		})
	}
}

// mdToolCalls writes the flipped tasks' tool calls, a table per task with
// the baseline's calls beside the candidate's.
func mdToolCalls(b *strings.Builder, r *Report) {
	fs := toolFlips(r.Flipped)
	if len(fs) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("### Tool calls of flipped tasks (%d)\n\nEach call with what the model was told, baseline beside candidate, in the order made.\n\n", len(fs))
	cell := func(c *ToolCall) string {
		if c == nil {
			return "-"
		}
		out := mdText(truncate(c.outcome(), mdToolTextRunes))
		if c.outcomeClass() != "ok" {
			out = "**" + out + "**"
		}
		return mdCode(truncate(c.call(), mdToolTextRunes)) + "<br>" + out
	}
	for i, f := range fs {
		if i == mdMaxToolFlips {
			p("… and %d more.\n\n", len(fs)-i)
			break
		}
		p("#### %s: %s %s → %s\n\n", mdCode(f.Task), mdCode(f.Metric), mdText(f.From), mdText(f.To))
		p("| # | Baseline %s | Candidate %s |\n|--:|---|---|\n", mdText(r.Baseline.Version), mdText(r.Candidate.Version))
		pairs := callPairs(f)
		for j, c := range pairs {
			if j == mdMaxToolCalls {
				p("\n… and %d more calls.\n", len(pairs)-j)
				break
			}
			p("| %d | %s | %s |\n", c.N, cell(c.Baseline), cell(c.Candidate))
		}
		p("\n")
	}
}

// htmlToolFlip is one flipped task's calls as the HTML report lays them
// out.
type htmlToolFlip struct {
	Task, Metric, From, To string
	Rows                   []htmlCallRow
}

type htmlCallRow struct {
	N                   int
	Baseline, Candidate *htmlCall
}

type htmlCall struct {
	Call, Outcome, Class string
}

// htmlToolFlips lays out up to htmlMaxToolFlips flipped tasks' calls; the
// int is how many more there are.
func htmlToolFlips(fs []Flip) ([]htmlToolFlip, int) {
	fs = toolFlips(fs)
	rest := max(len(fs)-htmlMaxToolFlips, 0)
	fs = fs[:len(fs)-rest]
	conv := func(c *ToolCall) *htmlCall {
		if c == nil {
			return nil
		}
		return &htmlCall{Call: truncate(c.call(), htmlToolTextRunes), Outcome: truncate(c.outcome(), htmlToolTextRunes), Class: c.outcomeClass()}
	}
	out := make([]htmlToolFlip, 0, len(fs))
	for _, f := range fs {
		v := htmlToolFlip{Task: f.Task, Metric: f.Metric, From: f.From, To: f.To}
		for _, p := range callPairs(f) {
			v.Rows = append(v.Rows, htmlCallRow{N: p.N, Baseline: conv(p.Baseline), Candidate: conv(p.Candidate)})
		}
		out = append(out, v)
	}
	return out, rest
}

// jsonToolCall is a tool call in the JSON report.
type jsonToolCall struct {
	Source    string `json:"source"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Decision  string `json:"decision"`
	Result    string `json:"result,omitempty"`
	Error     string `json:"error,omitempty"`
}

func jsonCalls(cs []ToolCall) []jsonToolCall {
	if len(cs) == 0 {
		return nil
	}
	out := make([]jsonToolCall, len(cs))
	for i, c := range cs {
		out[i] = jsonToolCall(c)
	}
	return out
}
