package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

//go:embed html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Parse(htmlSource))

// WriteHTML writes one self-contained HTML file: inline CSS, inline SVG
// charts, no scripts, fonts, images or links, so it opens offline and as a
// CI artifact. It shows the verdict, a forest plot of every metric's effect
// with its CI (ForestSVG), the gates, the comparison matrix (every task's
// result, score, cost and latency under both strategies, filtered to the
// regressed, improved, differing or failed tasks by CSS alone), a bar
// chart and a table of flipped tasks, their tool calls (baseline beside
// candidate), the regressed tasks and the divergences. All text is escaped
// by html/template.
//
// # Notes
//
// Metrics have different units (rates, tokens, dollars), so each row of the
// forest plot has its own symmetric scale around a shared zero line: the
// plot shows direction, size relative to the CI, and whether the CI crosses
// zero, which is what a reader decides on; the numbers sit beside each row.
func WriteHTML(w io.Writer, r *Report) error {
	var b strings.Builder
	if err := htmlTemplate.Execute(&b, htmlModel(r)); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

type htmlView struct {
	Pipeline     string
	Verdict      string
	VerdictClass string
	ExitCode     int
	Summary      string
	Baseline     htmlStrategy
	Candidate    htmlStrategy
	Tasks        int
	Fidelity     string
	Reasons      []string
	Metrics      []htmlMetric
	Forest       template.HTML
	Gates        []htmlGate
	Matrix       htmlMatrix
	Regressed    []string
	FlipChart    htmlChart
	Flipped      []Flip
	// ToolFlips are the flipped tasks' tool calls, side by side, of
	// ToolFlipsTotal flipped tasks with calls; MoreTools are left out.
	ToolFlips      []htmlToolFlip
	ToolFlipsTotal int
	MoreTools      int
	Divergences    []Divergence
	// CandidatePipeline and Live: see Report.
	CandidatePipeline string
	Live              *htmlLive
}

type htmlStrategy struct {
	Name, Version, Hash, Short string
}

type htmlMetric struct {
	cells
	Class     string
	Direction string
}

type htmlGate struct {
	Name    string
	Ruling  string
	Class   string
	Reasons []string
	Metrics string
}

// htmlChart is an SVG chart laid out in Go, so the template only places
// precomputed, fixed-precision coordinates.
type htmlChart struct {
	Width, Height string
	LabelX        string // labels end here
	Rows          []htmlRow
}

type htmlRow struct {
	Y, TextY   string
	Label      string
	Text       string
	Class      string
	BarX, BarW string
	TextX      string
}

// Layout of the flip chart, in SVG user units.
const (
	chartWidth  = 760.0
	labelRight  = 180.0 // labels end here (text-anchor end)
	barLeft     = 190.0
	barMaxWidth = 360.0
	barRow      = 24.0
)

// coord formats a coordinate with one decimal.
func coord(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func classOf(r sdk.Ruling) string {
	switch r {
	case sdk.Pass, sdk.Review, sdk.Fail:
		return string(r)
	}
	return "unknown"
}

func htmlModel(r *Report) htmlView {
	v := htmlView{
		Pipeline:     r.Pipeline,
		Verdict:      rulingWord(r.Ruling),
		VerdictClass: classOf(r.Ruling),
		ExitCode:     r.ExitCode,
		Summary:      verdictSummary(r),
		Baseline:     htmlStrategy{r.Baseline.Name, r.Baseline.Version, r.Baseline.Hash, shortHash(r.Baseline.Hash)},
		Candidate:    htmlStrategy{r.Candidate.Name, r.Candidate.Version, r.Candidate.Hash, shortHash(r.Candidate.Hash)},
		Tasks:        r.Tasks,
		Fidelity:     fidelityText(r),
		Reasons:      r.Reasons,
		Regressed:    sortedTasks(r.Regressed),
		Flipped:      sortedFlips(r.Flipped),
		Divergences:  sortedDivergences(r.Divergences),
	}
	for _, m := range r.Metrics {
		c := metricCells(m)
		dir := "lower is better"
		if m.HigherIsBetter {
			dir = "higher is better"
		}
		v.Metrics = append(v.Metrics, htmlMetric{cells: c, Class: trendClass(c.Trend), Direction: dir})
	}
	v.Forest = ForestSVG(r.Metrics)
	v.Matrix = htmlMatrixOf(r.Matrix)
	for _, g := range r.Gates {
		v.Gates = append(v.Gates, htmlGate{
			Name: g.Name, Ruling: rulingWord(g.Ruling), Class: classOf(g.Ruling),
			Reasons: g.Reasons, Metrics: gateMetrics(g.Metrics),
		})
	}
	v.FlipChart = flipChart(groupFlips(r.Flipped))
	v.ToolFlips, v.MoreTools = htmlToolFlips(r.Flipped)
	v.ToolFlipsTotal = len(v.ToolFlips) + v.MoreTools
	if c := r.CandidatePipeline; c != nil {
		v.CandidatePipeline = candidateLabel(c)
	}
	v.Live = htmlLiveOf(r.Live)
	return v
}

func trendClass(t int) string {
	switch t {
	case 1:
		return "better"
	case -1:
		return "worse"
	}
	return "neutral"
}

// flipChart lays out one bar per metric and direction of flip.
func flipChart(gs []flipGroup) htmlChart {
	ch := htmlChart{Width: coord(chartWidth), Height: coord(barRow*float64(len(gs)) + 4), LabelX: coord(labelRight)}
	most := 1
	for _, g := range gs {
		most = max(most, g.Count)
	}
	for i, g := range gs {
		y := barRow * float64(i)
		w := max(barMaxWidth*float64(g.Count)/float64(most), 2)
		ch.Rows = append(ch.Rows, htmlRow{
			Y: coord(y + 4), TextY: coord(y + 17),
			Label: g.Metric + ": " + g.From + " → " + g.To,
			Text:  strconv.Itoa(g.Count),
			Class: flipClass(g),
			BarX:  coord(barLeft), BarW: coord(w), TextX: coord(barLeft + w + 6),
		})
	}
	return ch
}

// flipClass colours the pass/fail flips; other outcomes stay neutral.
func flipClass(g flipGroup) string {
	switch {
	case g.From == "pass" && g.To == "fail":
		return "worse"
	case g.From == "fail" && g.To == "pass":
		return "better"
	}
	return "neutral"
}
