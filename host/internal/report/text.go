package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/host/internal/termtext"
	"github.com/sextant-dev/sextant/sdk"
)

// Option changes how WriteText renders.
type Option func(*textOptions)

type textOptions struct {
	color bool
}

// WithColor turns ANSI colour on or off (off by default). The caller
// decides: colour only on a terminal and never with NO_COLOR set.
func WithColor(on bool) Option {
	return func(o *textOptions) { o.color = on }
}

// The ANSI escapes WriteText uses.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

// How much of each list the terminal summary shows.
const (
	textMaxDivergences = 5
	textMaxRegressed   = 10
	textReasonWidth    = 100
)

// WriteText writes the terminal summary: the strategies compared, a table of
// metrics (baseline, candidate, effect, CI, p, n), the gates with their
// ruling and first reason, divergences, regressed tasks, a count of the
// comparison matrix's regressed, improved, different and failed tasks,
// flipped tasks, the
// tool calls of the first flipped tasks that made any (baseline beside
// candidate), and a final verdict line. Without WithColor(true) it writes no escape sequences.
func WriteText(w io.Writer, r *Report, opts ...Option) error {
	var o textOptions
	for _, opt := range opts {
		opt(&o)
	}
	t := &textWriter{color: o.color}
	t.render(r)
	if _, err := io.WriteString(w, t.b.String()); err != nil {
		return fmt.Errorf("write text report: %w", err)
	}
	return nil
}

type textWriter struct {
	b     strings.Builder
	color bool
}

func (t *textWriter) paint(code, s string) string {
	if !t.color || code == "" || s == "" {
		return s
	}
	return code + s + ansiReset
}

func rulingColor(r sdk.Ruling) string {
	switch r {
	case sdk.Pass:
		return ansiGreen
	case sdk.Review:
		return ansiYellow
	case sdk.Fail:
		return ansiRed
	}
	return ""
}

func trendColor(tr int) string {
	switch tr {
	case 1:
		return ansiGreen
	case -1:
		return ansiRed
	}
	return ""
}

// printf writes what the report says with its control characters
// escaped (termtext.Escape): model replies, tool results and reasons come
// from the store or a plugin. Only paint's colours are written as they
// are.
func (t *textWriter) printf(format string, args ...any) {
	t.b.WriteString(termtext.Escape(fmt.Sprintf(format, args...)))
}

func (t *textWriter) render(r *Report) {
	pipeline := r.Pipeline
	if pipeline == "" {
		pipeline = "-"
	}
	head := [][]string{
		{"pipeline", pipeline},
		{"baseline", strategyLabel(r.Baseline)},
		{"candidate", strategyLabel(r.Candidate)},
		{"tasks", fmt.Sprintf("%d replayed, fidelity %s%s", r.Tasks, fidelityText(r), skippedNote(r.Skipped))},
	}
	if c := r.CandidatePipeline; c != nil {
		head = append(head[:3], append([][]string{{"", candidateLabel(c)}}, head[3:]...)...)
	}
	t.table([]string{"", ""}, head, nil, nil)
	t.printf("\n")

	if len(r.Metrics) == 0 && len(r.Own) > 0 {
		rows := make([][]string, len(r.Own))
		for i, m := range r.Own {
			c := metricCells(m)
			rows[i] = []string{c.Name, c.Kind, c.Baseline, c.N}
		}
		t.table([]string{"METRIC", "KIND", "BASELINE", "N"}, rows, []bool{false, false, true, true}, nil)
	} else if len(r.Metrics) == 0 {
		t.printf("no metrics\n")
	} else {
		rows := make([][]string, len(r.Metrics))
		trends := make([]int, len(r.Metrics))
		for i, m := range r.Metrics {
			c := metricCells(m)
			rows[i] = []string{c.Name, c.Kind, c.Baseline, c.Candidate, c.Effect, c.CI, c.P, c.N}
			trends[i] = c.Trend
		}
		t.table([]string{"METRIC", "KIND", "BASELINE", "CANDIDATE", "EFFECT", "CI", "P", "N"}, rows,
			[]bool{false, false, true, true, true, false, true, true},
			func(row, col int) string {
				if col == 4 {
					return trendColor(trends[row])
				}
				return ""
			})
	}
	t.printf("\n")

	if len(r.Gates) == 0 && len(r.GatesNotRun) > 0 {
		t.printf("gates not run (they judge a candidate: sextant gate PIPELINE --candidate FILE): %s\n", strings.Join(r.GatesNotRun, ", "))
	} else if len(r.Gates) == 0 {
		t.printf("no gates\n")
	} else {
		rows := make([][]string, len(r.Gates))
		for i, g := range r.Gates {
			reason := truncate(firstReason(g), textReasonWidth)
			if n := len(g.Reasons) - 1; n > 0 {
				reason += fmt.Sprintf(" (+%d more)", n)
			}
			rows[i] = []string{g.Name, rulingWord(g.Ruling), reason}
		}
		t.table([]string{"GATE", "RULING", "REASON"}, rows, nil, func(row, col int) string {
			if col == 1 {
				return rulingColor(r.Gates[row].Ruling)
			}
			return ""
		})
	}

	if ds := sortedDivergences(r.Divergences); len(ds) > 0 {
		t.printf("\ndivergences: %d %s left the recorded trace\n", len(ds), plural(len(ds), "self-replay", "self-replays"))
		for i, d := range ds {
			if i == textMaxDivergences {
				t.printf("  … and %d more\n", len(ds)-i)
				break
			}
			t.printf("  %s at %s: expected %s, got %s\n", d.Task, d.Node,
				truncate(d.Expected, 60), truncate(d.Got, 60))
		}
	}

	t.live(r)

	if len(r.Reasons) > 0 {
		t.printf("\n%s\n", r.Reasons[0])
		for _, reason := range r.Reasons[1:] {
			t.printf("  %s\n", reason)
		}
	}

	if rs := sortedTasks(r.Regressed); len(rs) > 0 {
		t.printf("\nregressed: %d %s passed under the baseline and failed under the candidate\n",
			len(rs), plural(len(rs), "task", "tasks"))
		shown := rs[:min(len(rs), textMaxRegressed)]
		line := "  " + strings.Join(shown, ", ")
		if rest := len(rs) - len(shown); rest > 0 {
			line += fmt.Sprintf(" … and %d more", rest)
		}
		t.printf("%s\n", line)
	}

	if len(r.Matrix) > 0 {
		_, n := rankRows(r.Matrix)
		t.printf("\ntasks: %d regressed, %d improved, %d different output, %d %s (of %d compared)\n",
			n[RowRegressed], n[RowImproved], n[RowDiffers], n[RowError], plural(n[RowError], "error", "errors"), len(r.Matrix))
	}

	if gs := groupFlips(r.Flipped); len(gs) > 0 {
		t.printf("\nflipped:\n")
		var metric string
		var parts []string
		flush := func() {
			if len(parts) > 0 {
				t.printf("  %s: %s\n", metric, strings.Join(parts, ", "))
			}
		}
		for _, g := range gs {
			if g.Metric != metric {
				flush()
				metric, parts = g.Metric, nil
			}
			parts = append(parts, fmt.Sprintf("%s->%s %d", g.From, g.To, g.Count))
		}
		flush()
	}
	t.toolCalls(r)

	verdict := fmt.Sprintf("verdict: %s (exit %d)", rulingWord(r.Ruling), r.ExitCode)
	t.b.WriteString("\n" + t.paint(ansiBold+rulingColor(r.Ruling), verdict) + ": " + termtext.Escape(verdictSummary(r)) + "\n")
}

// table writes rows under headers (no header line when all headers are
// empty), columns separated by two spaces, right-aligned where right says
// so, and painted per cell by color. Cells are escaped (termtext.Cell)
// before they are measured; widths count runes, and padding is added
// outside the colour so escapes never shift a column.
func (t *textWriter) table(headers []string, rows [][]string, right []bool, color func(row, col int) string) {
	esc := make([][]string, len(rows))
	for i, row := range rows {
		esc[i] = make([]string, len(row))
		for j, c := range row {
			esc[i][j] = termtext.Cell(c) // store text: see printf
		}
	}
	rows = esc
	widths := make([]int, len(headers))
	showHeader := false
	for i, h := range headers {
		widths[i] = utf8.RuneCountInString(h)
		showHeader = showHeader || h != ""
	}
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string, paint func(col int) string) {
		var b strings.Builder
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			painted := c
			if paint != nil {
				painted = t.paint(paint(i), c)
			}
			switch {
			case i < len(right) && right[i]:
				b.WriteString(pad + painted)
			case i == len(cells)-1:
				b.WriteString(painted) // no trailing spaces
			default:
				b.WriteString(painted + pad)
			}
		}
		t.b.WriteString(strings.TrimRight(b.String(), " "))
		t.b.WriteString("\n")
	}
	if showHeader {
		line(headers, func(int) string { return ansiBold })
	}
	for r, row := range rows {
		var paint func(int) string
		if color != nil {
			paint = func(col int) string { return color(r, col) }
		}
		line(row, paint)
	}
}

// skippedNote says how many self-replays on_miss = "skip" left out.
func skippedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d self-replays skipped: a call had no recording)", n)
}
