package report

import (
	"fmt"
	"io"
	"strings"
)

// How much of each list the Markdown summary shows.
const (
	mdMaxFlipped     = 20
	mdMaxRegressed   = 20
	mdMaxDivergences = 10
	mdMaxTasks       = 50
)

// WriteMarkdown writes a GitHub-flavoured Markdown summary that fits
// $GITHUB_STEP_SUMMARY: the verdict, the strategies compared, a metrics
// table, a gates table, the regressed and flipped tasks, the flipped
// tasks' tool calls (a table per task, baseline beside candidate), the
// comparison matrix's rows with something to see (regressed, improved,
// errors, different output: the HTML report's order) and the divergent
// tasks, each list capped with a count of the rest.
//
// # Notes
//
// The verdict is plain text (PASS, REVIEW, FAIL), not an emoji, so it reads
// the same in a terminal, a log and a screen reader. Text from gates and
// tasks is escaped so it cannot break a table or start Markdown syntax.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	title := "sextant"
	if r.Pipeline != "" {
		title += ": " + mdText(r.Pipeline)
	}
	p("## %s\n\n", title)
	p("**Verdict: %s** (exit %d): %s\n\n", rulingWord(r.Ruling), r.ExitCode, mdText(verdictSummary(r)))

	p("| | Strategy |\n|---|---|\n")
	p("| Baseline | %s |\n", mdStrategy(r.Baseline))
	p("| Candidate | %s |\n", mdStrategy(r.Candidate))
	if c := r.CandidatePipeline; c != nil {
		p("| Candidate pipeline | %s |\n", mdText(candidateLabel(c)))
	}
	p("\n")
	p("%d tasks replayed, fidelity %s.\n\n", r.Tasks, fidelityText(r))
	for _, reason := range r.Reasons {
		p("- %s\n", mdText(reason))
	}
	if len(r.Reasons) > 0 {
		p("\n")
	}

	p("%s", liveMarkdown(r))

	p("### Metrics\n\n")
	if len(r.Metrics) == 0 {
		p("No metrics.\n\n")
	} else {
		p("| Metric | Kind | Baseline | Candidate | Effect | CI | p | n | Change |\n")
		p("|---|---|--:|--:|--:|---|--:|--:|---|\n")
		for _, m := range r.Metrics {
			c := metricCells(m)
			effect := c.Effect
			if c.Trend != 0 {
				effect = "**" + effect + "**"
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCode(c.Name), mdText(c.Kind),
				c.Baseline, c.Candidate, effect, mdText(c.CI), mdText(c.P), c.N, trendWord(c.Trend))
		}
		p("\n")
	}

	p("### Gates\n\n")
	if len(r.Gates) == 0 {
		p("No gates.\n\n")
	} else {
		p("| Gate | Ruling | Reasons |\n|---|---|---|\n")
		for _, g := range r.Gates {
			reasons := make([]string, len(g.Reasons))
			for i, s := range g.Reasons {
				reasons[i] = mdText(s)
			}
			if len(g.Metrics) > 0 {
				reasons = append(reasons, mdText(gateMetrics(g.Metrics)))
			}
			ruling := rulingWord(g.Ruling)
			if ruling != string(g.Ruling) {
				ruling = "**" + ruling + "**"
			}
			p("| %s | %s | %s |\n", mdCode(g.Name), ruling, strings.Join(reasons, "<br>"))
		}
		p("\n")
	}

	if rs := sortedTasks(r.Regressed); len(rs) > 0 {
		p("### Regressed tasks (%d)\n\nPassed under the baseline, failed under the candidate.\n\n", len(rs))
		for i, t := range rs {
			if i == mdMaxRegressed {
				p("- … and %d more\n", len(rs)-i)
				break
			}
			p("- %s\n", mdCode(t))
		}
		p("\n")
	}

	if fs := sortedFlips(r.Flipped); len(fs) > 0 {
		p("### Flipped tasks (%d)\n\n", len(fs))
		p("| Task | Metric | From | To |\n|---|---|---|---|\n")
		for i, f := range fs {
			if i == mdMaxFlipped {
				break
			}
			p("| %s | %s | %s | %s |\n", mdCode(f.Task), mdCode(f.Metric), mdText(f.From), mdText(f.To))
		}
		if rest := len(fs) - mdMaxFlipped; rest > 0 {
			p("\n… and %d more.\n", rest)
		}
		p("\n")
	}
	mdToolCalls(&b, r)
	mdTasks(&b, r.Matrix)

	if ds := sortedDivergences(r.Divergences); len(ds) > 0 {
		p("### Divergences (%d)\n\nSelf-replays that left their recorded trace.\n\n", len(ds))
		p("| Task | Node | Expected | Got |\n|---|---|---|---|\n")
		for i, d := range ds {
			if i == mdMaxDivergences {
				break
			}
			p("| %s | %s | %s | %s |\n", mdCode(d.Task), mdCode(d.Node),
				mdText(truncate(d.Expected, 80)), mdText(truncate(d.Got, 80)))
		}
		if rest := len(ds) - mdMaxDivergences; rest > 0 {
			p("\n… and %d more.\n", rest)
		}
		p("\n")
	}

	out := strings.TrimRight(b.String(), "\n") + "\n"
	if _, err := io.WriteString(w, out); err != nil {
		return fmt.Errorf("write markdown report: %w", err)
	}
	return nil
}

// mdTasks writes the rows of the comparison matrix that regressed,
// improved, failed with an error or changed their output, in the HTML
// report's order, at most mdMaxTasks of them.
func mdTasks(b *strings.Builder, rows []TaskRow) {
	ranked, _ := rankRows(rows)
	var shown []rankedRow
	for _, r := range ranked {
		if len(r.kinds) > 0 {
			shown = append(shown, r)
		}
	}
	if len(shown) == 0 {
		return
	}
	fmt.Fprintf(b, "### Tasks (%d of %d)\n\nThe compared tasks that regressed, improved, failed with an error or changed their output.\n\n",
		len(shown), len(rows))
	b.WriteString("| Task | Change | Baseline | Candidate |\n|---|---|---|---|\n")
	for i, r := range shown {
		if i == mdMaxTasks {
			break
		}
		change := strings.Join(r.kinds, ", ")
		change = strings.Replace(change, RowDiffers, "different output", 1)
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", mdCode(r.row.Task), change,
			mdCell(r.row.Baseline), mdCell(r.row.Candidate))
	}
	if rest := len(shown) - mdMaxTasks; rest > 0 {
		fmt.Fprintf(b, "\n… and %d more.\n", rest)
	}
	b.WriteString("\n")
}

// mdCell is one task's result under one strategy: pass, fail or error,
// score, cost and latency, and the error, if any.
func mdCell(c TaskCell) string {
	h := cellOf(c)
	s := fmt.Sprintf("%s %s, %s, %s", h.Result, h.Score, h.Cost, h.Latency)
	if c.Error != "" {
		s += ": " + mdText(truncate(c.Error, 80))
	}
	return s
}

func mdStrategy(s Strategy) string {
	var parts []string
	if s.Name != "" {
		parts = append(parts, mdText(s.Name))
	}
	if s.Version != "" {
		parts = append(parts, mdText(s.Version))
	}
	if s.Hash != "" {
		parts = append(parts, mdCode(shortHash(s.Hash)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// mdReplacer escapes the characters that start Markdown or HTML syntax, and
// the pipe that ends a table cell.
var mdReplacer = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "|", `\|`, "#", `\#`, "~", `\~`,
)

// mdText escapes s for inline Markdown, on one line.
func mdText(s string) string {
	return mdReplacer.Replace(strings.Join(strings.Fields(s), " "))
}

// mdCode puts s in a code span on one line. A backtick inside is fenced
// with double backticks; a pipe is escaped, which GitHub honours even in
// code spans inside tables.
func mdCode(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	s = strings.ReplaceAll(s, "|", `\|`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}
