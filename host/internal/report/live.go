package report

import (
	"fmt"
	"sort"
	"strings"
)

// CandidatePipeline identifies a candidate that is a pipeline, not a
// strategy (gate --candidate-pipeline): the file given, and the digest of
// the pipeline it amounts to (an overlay merged over its base).
type CandidatePipeline struct {
	File string
	// Overlay tells an overlay from a full pipeline.
	Overlay bool
	Digest  string
}

// Live is what the candidate's replay sent to live providers and tool
// sources for want of a recording (on_miss = live).
type Live struct {
	// Calls and CostUSD are the totals; MaxCostUSD the cap they were
	// under ([replay] max_live_cost_usd), 0 for none.
	Calls      int
	CostUSD    float64
	MaxCostUSD float64
	// Recorded tells whether their answers were kept for the next replay.
	Recorded bool
	// Steps are the calls grouped by step and call, rendered in order.
	Steps []LiveStep
}

// LiveStep is the live calls of one step to one model or tool.
type LiveStep struct {
	// Step is the routine node ("" for calls made after the run, such as
	// a rubric's judge); Call names the provider block and model
	// ("default gpt-4o") or the tool.
	Step, Call string
	Calls      int
	CostUSD    float64
	// Tasks are the tasks that made them, sorted.
	Tasks []string
}

// liveMaxTasks is how many tasks a live step lists in text and Markdown.
const liveMaxTasks = 5

// liveSummary is the sentence every format opens the live calls with.
func liveSummary(l *Live) string {
	s := fmt.Sprintf("%d %s made live (no recording), costing %s", l.Calls, plural(l.Calls, "call", "calls"), usd(l.CostUSD))
	if l.MaxCostUSD > 0 {
		s += " of max_live_cost_usd " + usd(l.MaxCostUSD)
	}
	if l.Recorded {
		s += "; recorded, so the next gate replays them"
	}
	return s
}

func usd(v float64) string { return fmt.Sprintf("$%.4f", v) }

// stepName is how a step's calls are labelled: "" is the scoring after
// the run.
func stepName(s string) string {
	if s == "" {
		return "(score)"
	}
	return s
}

// liveTasks lists the first tasks of a step, with a count of the rest.
func liveTasks(tasks []string) string {
	ts := append([]string(nil), tasks...)
	sort.Strings(ts)
	shown := ts[:min(len(ts), liveMaxTasks)]
	s := strings.Join(shown, ", ")
	if rest := len(ts) - len(shown); rest > 0 {
		s += fmt.Sprintf(" … and %d more", rest)
	}
	return s
}

// candidateLabel is a candidate pipeline as the text and Markdown
// summaries name it.
func candidateLabel(c *CandidatePipeline) string {
	kind := "pipeline"
	if c.Overlay {
		kind = "overlay"
	}
	return fmt.Sprintf("%s %s (digest %s)", kind, c.File, shortHash(c.Digest))
}

// writeLiveText is the text summary's live calls section.
func (t *textWriter) live(r *Report) {
	if r.Live == nil {
		return
	}
	t.printf("\n%s\n", liveSummary(r.Live))
	for _, s := range r.Live.Steps {
		t.printf("  %s: %s × %d, %s: %s\n", stepName(s.Step), s.Call, s.Calls, usd(s.CostUSD), liveTasks(s.Tasks))
	}
}

// liveMarkdown is the Markdown summary's live calls section.
func liveMarkdown(r *Report) string {
	if r.Live == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Live calls\n\n%s.\n\n", mdText(liveSummary(r.Live)))
	if len(r.Live.Steps) > 0 {
		b.WriteString("| Step | Call | Calls | Cost | Tasks |\n|---|---|--:|--:|---|\n")
		for _, s := range r.Live.Steps {
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", mdText(stepName(s.Step)), mdText(s.Call), s.Calls, usd(s.CostUSD), mdText(liveTasks(s.Tasks)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// htmlLive is the HTML report's live calls section.
type htmlLive struct {
	Summary string
	Steps   []htmlLiveStep
}

type htmlLiveStep struct {
	Step, Call, Cost, Tasks string
	Calls                   int
}

func htmlLiveOf(l *Live) *htmlLive {
	if l == nil {
		return nil
	}
	v := &htmlLive{Summary: liveSummary(l)}
	for _, s := range l.Steps {
		v.Steps = append(v.Steps, htmlLiveStep{Step: stepName(s.Step), Call: s.Call, Calls: s.Calls, Cost: usd(s.CostUSD),
			Tasks: strings.Join(s.Tasks, ", ")})
	}
	return v
}

type jsonCandidatePipeline struct {
	File    string `json:"file"`
	Overlay bool   `json:"overlay"`
	Digest  string `json:"digest"`
}

type jsonLive struct {
	Calls      int            `json:"calls"`
	CostUSD    num            `json:"cost_usd"`
	MaxCostUSD num            `json:"max_cost_usd"`
	Recorded   bool           `json:"recorded"`
	Steps      []jsonLiveStep `json:"steps"`
}

type jsonLiveStep struct {
	Step    string   `json:"step"`
	Call    string   `json:"call"`
	Calls   int      `json:"calls"`
	CostUSD num      `json:"cost_usd"`
	Tasks   []string `json:"tasks"`
}

func jsonLiveOf(r *Report) (*jsonCandidatePipeline, *jsonLive) {
	var c *jsonCandidatePipeline
	if r.CandidatePipeline != nil {
		c = &jsonCandidatePipeline{File: r.CandidatePipeline.File, Overlay: r.CandidatePipeline.Overlay, Digest: r.CandidatePipeline.Digest}
	}
	if r.Live == nil {
		return c, nil
	}
	l := &jsonLive{Calls: r.Live.Calls, CostUSD: num(r.Live.CostUSD), MaxCostUSD: num(r.Live.MaxCostUSD), Recorded: r.Live.Recorded,
		Steps: make([]jsonLiveStep, 0, len(r.Live.Steps))}
	for _, s := range r.Live.Steps {
		tasks := append([]string{}, s.Tasks...)
		sort.Strings(tasks)
		l.Steps = append(l.Steps, jsonLiveStep{Step: s.Step, Call: s.Call, Calls: s.Calls, CostUSD: num(s.CostUSD), Tasks: tasks})
	}
	return c, l
}
