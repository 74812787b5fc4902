package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/sdk"
)

// forestSource draws the forest plot. Colours and fonts are presentation
// attributes, not CSS: the same markup looks the same inline in the HTML
// report, on its own, and in the dashboard, whose Content-Security-Policy
// refuses inline styles.
const forestSource = `<svg class="forest" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="12" role="img" aria-label="effect of each metric with its confidence interval">
<text class="caption" x="{{.ZeroX}}" y="12" text-anchor="middle" fill="#57606a">no change</text>
{{- range .Rows}}
<g class="row {{.Class}}"><title>{{.Title}}</title>
<line stroke="#eaeef2" x1="{{$.GuideX1}}" x2="{{$.GuideX2}}" y1="{{.Y}}" y2="{{.Y}}"/>
<text class="label" x="{{$.LabelX}}" y="{{.TextY}}" text-anchor="end" fill="#1f2328">{{.Label}}</text>
{{- if .Draw}}
<line class="ci" stroke="{{.Colour}}" stroke-width="2" x1="{{.X1}}" x2="{{.X2}}" y1="{{.Y}}" y2="{{.Y}}"/>
<circle fill="{{.Colour}}" cx="{{.CX}}" cy="{{.Y}}" r="5"/>
{{- end}}
<text class="value" x="{{.TextX}}" y="{{.TextY}}" fill="#1f2328">{{.Text}}</text>
</g>
{{- end}}
<line class="zero" stroke="#57606a" stroke-dasharray="4 3" x1="{{.ZeroX}}" x2="{{.ZeroX}}" y1="{{.AxisTop}}" y2="{{.AxisBottom}}"/>
</svg>`

var forestTemplate = template.Must(template.New("forest").Parse(forestSource))

// Layout of the forest plot, in SVG user units (at font-size 12).
const (
	// charWidth is a generous width of one character at 12px: wider than
	// any digit, lower-case letter or punctuation of common sans-serif
	// fonts, so a label laid out in Go stays inside the box in a browser.
	charWidth   = 7.5
	forestPad   = 8.0
	forestGap   = 14.0 // between the label column, the plot and the numbers
	forestRow   = 30.0
	forestTop   = 24.0
	plotHalf    = 150.0 // the largest |value| of a row reaches this far
	maxLabel    = 40    // longer metric names are cut (the full name is in the row's title)
	minLabelCol = 60.0
)

// ForestSVG draws the forest plot of metrics: one row per metric with its
// effect (candidate − baseline) as a dot, its CI as a line, and the effect,
// CI and p-value beside it, each row scaled so its largest |value| reaches
// the same width around a shared zero line. It is one standalone <svg>
// element for an HTML document (it has no xmlns), safe to place there:
// every text is escaped. The HTML report
// and the dashboard (through the API) both show this plot.
//
// # Notes
//
// The label and number columns are as wide as their longest text at a
// character width no common font exceeds, so no label is clipped; names
// longer than 40 characters are cut with "…".
func ForestSVG(metrics []sdk.Metric) template.HTML {
	var b strings.Builder
	if err := forestTemplate.Execute(&b, forestModel(metrics)); err != nil {
		// The template is fixed and its data plain strings: an error here
		// is a bug, not bad input.
		panic(fmt.Sprintf("forest plot: %v", err))
	}
	return template.HTML(b.String()) // html/template escaped every text
}

type forestChart struct {
	Width, Height    string
	ZeroX, LabelX    string
	GuideX1, GuideX2 string
	AxisTop          string
	AxisBottom       string
	Rows             []forestRowView
}

type forestRowView struct {
	Y, TextY     string
	Label, Title string
	Text         string
	Class        string
	Colour       string
	Draw         bool
	X1, X2, CX   string
	TextX        string
}

// trendColour is the colour of a trend: green better, red worse, grey when
// the CI includes zero.
func trendColour(t int) string {
	switch t {
	case 1:
		return "#1a7f37"
	case -1:
		return "#cf222e"
	}
	return "#57606a"
}

// pText is a p-value as the plot shows it: "p<0.001" or "p=0.031".
func pText(p string) string {
	if strings.HasPrefix(p, "<") {
		return "p" + p
	}
	return "p=" + p
}

// cutLabel shortens a label to maxLabel characters.
func cutLabel(s string) string {
	if utf8.RuneCountInString(s) <= maxLabel {
		return s
	}
	r := []rune(s)
	return string(r[:maxLabel-1]) + "…"
}

func textWidth(s string) float64 { return charWidth * float64(utf8.RuneCountInString(s)) }

func forestModel(ms []sdk.Metric) forestChart {
	labelCol, textCol := minLabelCol, textWidth("no change")
	rows := make([]forestRowView, len(ms))
	for i, m := range ms {
		c := metricCells(m)
		dir := "lower is better"
		if m.HigherIsBetter {
			dir = "higher is better"
		}
		rows[i] = forestRowView{
			Label: cutLabel(m.Name), Text: c.Effect + " " + c.CI + " " + pText(c.P),
			Class: trendClass(c.Trend), Colour: trendColour(c.Trend),
			Title: fmt.Sprintf("%s: %s → %s, effect %s, CI %s, p %s, n %s (%s)",
				m.Name, c.Baseline, c.Candidate, c.Effect, c.CI, c.P, c.N, dir),
		}
		labelCol = max(labelCol, textWidth(rows[i].Label))
		textCol = max(textCol, textWidth(rows[i].Text))
	}
	labelRight := forestPad + labelCol
	zero := labelRight + forestGap + plotHalf + 10
	textLeft := zero + plotHalf + 10 + forestGap
	width := textLeft + textCol + forestPad
	height := forestTop + forestRow*float64(len(ms)) + 6
	ch := forestChart{
		Width: coord(width), Height: coord(height), ZeroX: coord(zero), LabelX: coord(labelRight),
		GuideX1: coord(zero - plotHalf - 10), GuideX2: coord(zero + plotHalf + 10),
		AxisTop: coord(forestTop - 6), AxisBottom: coord(height - 4),
	}
	for i, m := range ms {
		row := rows[i]
		y := forestTop + forestRow*(float64(i)+0.5)
		row.Y, row.TextY, row.TextX = coord(y), coord(y+4), coord(textLeft)
		lo, hi, eff := round6(m.CILow), round6(m.CIHigh), round6(m.Effect)
		if finite(lo) && finite(hi) && finite(eff) {
			scale := max(math.Abs(lo), math.Abs(hi), math.Abs(eff))
			if scale == 0 {
				scale = 1
			}
			x := func(v float64) string { return coord(zero + v/scale*plotHalf) }
			row.Draw, row.X1, row.X2, row.CX = true, x(lo), x(hi), x(eff)
		}
		ch.Rows = append(ch.Rows, row)
	}
	return ch
}
