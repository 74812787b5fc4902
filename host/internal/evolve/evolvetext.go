package evolve

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/termtext"
	"github.com/sextant-dev/sextant/sdk"
)

// Every writer in this package writes through report.TermSafe: versions,
// mutator names, reasons and errors come from a model, a plugin or the
// store, and a control character in one is shown escaped, never obeyed
// by the terminal. A table's cells are escaped instead, each by
// termtext.Cell, before tabwriter measures them.

// WriteBaseline writes how the baseline base's own replays went, as
// sextant evolve prints it: tasks, fidelity and, when skipped is set, the
// self-replays skipped for a call without a recording; then the
// judgment's reasons.
func (j *Judgment) WriteBaseline(w io.Writer, base *strategy.Strategy, skipped bool) {
	w = report.TermSafe(w)
	self := j.Self
	fmt.Fprintf(w, "baseline %s: %d tasks replayed, fidelity %.1f%%", base.Metadata.Version, j.Tasks, 100*self.Fidelity())
	if skipped && self.Skipped > 0 {
		fmt.Fprintf(w, " (%d self-replays skipped: a call had no recording)", self.Skipped)
	}
	fmt.Fprintln(w)
	for _, r := range j.Reasons {
		fmt.Fprintf(w, "  %s\n", r)
	}
}

// WriteText writes what a round found: the baseline's replays, then, when
// no mutator proposed a candidate, why each proposed nothing; otherwise
// the mutators that proposed nothing (to diag, beside the table) and the
// candidates' table. It reports whether there are candidates.
func (r *RoundResult) WriteText(w, diag io.Writer, base *strategy.Strategy, metric string) bool {
	w, diag = report.TermSafe(w), report.TermSafe(diag)
	r.Baseline.WriteBaseline(w, base, true)
	if len(r.Candidates) == 0 {
		fmt.Fprintln(w, "no mutator proposed a candidate:")
		for _, rj := range r.Rejected {
			fmt.Fprintf(w, "  %s: %v\n", rj.Mutator, rj.Err)
		}
		return false
	}
	for _, rj := range r.Rejected {
		fmt.Fprintf(diag, "%s proposed nothing: %v\n", rj.Mutator, rj.Err)
	}
	WriteCandidates(w, r.Candidates, metric)
	return true
}

// WriteCandidates writes a table of the candidates, by mutator: version,
// id, effect on metric with its interval, ruling, and the first failing
// (or review) gate's first reason.
func WriteCandidates(w io.Writer, cands []Evaluated, metric string) {
	sorted := append([]Evaluated(nil), cands...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Mutator < sorted[j].Mutator })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "MUTATOR\tCANDIDATE\tID\t%s\tCI\tRULING\tFIRST FAILING OR REVIEW REASON\n", termtext.Cell(metric))
	for _, c := range sorted {
		effect, ci := "", ""
		for _, m := range c.Comparison.Metrics {
			if m.Name == metric {
				effect = fmt.Sprintf("%+.3f", m.Effect)
				ci = fmt.Sprintf("[%+.3f, %+.3f]", m.CILow, m.CIHigh)
			}
		}
		reason := ""
		for _, g := range c.Result.Gates {
			if g.Ruling != sdk.Pass && len(g.Reasons) > 0 {
				reason = g.Name + ": " + report.Clip(g.Reasons[0], 70)
				break
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termtext.Cell(c.Mutator), termtext.Cell(c.Strategy.Metadata.Version), termtext.Cell(c.ID()),
			effect, ci, termtext.Cell(string(c.Result.Ruling)), termtext.Cell(reason))
	}
	tw.Flush()
}

// WriteDryRun writes what a dry run would promote of cands (Select on
// metric), or none when nothing.
func WriteDryRun(w io.Writer, cands []Evaluated, metric, none string) {
	w = report.TermSafe(w)
	if winner, _ := Select(cands, metric); winner != nil {
		fmt.Fprintf(w, "dry run: would promote %s %s (%s)\n", winner.Strategy.Metadata.Version, winner.ID(), winner.Mutator)
	} else {
		fmt.Fprintln(w, "dry run: "+none)
	}
}

// WriteText writes how the candidates were settled: the promoted one and
// its file, else the review requests queued (with the command that shows
// each; storeFlag is the --store its follow-up commands need), else none.
func (s *Settlement) WriteText(w io.Writer, storeFlag, none string) {
	w = report.TermSafe(w)
	switch {
	case s.Winner != nil:
		fmt.Fprintf(w, "promoted %s %s (%s) → %s\n", s.Winner.Strategy.Metadata.Name, s.Winner.Strategy.Metadata.Version, s.Winner.Mutator, s.Path)
	case len(s.Reviews) > 0:
		for _, rv := range s.Reviews {
			fmt.Fprintf(w, "awaiting review: %s (%s) — sextant review show %s%s\n", rv.ID, rv.Mutator, rv.ID, storeFlag)
		}
	default:
		fmt.Fprintln(w, none)
	}
}

// WriteText writes one line for the epoch: the working strategy's
// metric, the operations made, the candidate's effect and ruling.
func (ep Epoch) WriteText(w io.Writer, epochs int, metric string) {
	line := fmt.Sprintf("epoch %d/%d: %s %.3f", ep.N, epochs, metric, ep.Rate)
	if ops := OpCounts(ep.Ops); ops == "" {
		line += "; nothing to change"
	} else {
		line += "; " + ops
	}
	if c := ep.Candidate; c != nil {
		line += fmt.Sprintf(" → candidate %s %s", c.Strategy.Metadata.Version, c.ID())
		for _, m := range c.Comparison.Metrics {
			if m.Name == metric {
				line += fmt.Sprintf(" %+.3f", m.Effect)
			}
		}
		line += " " + string(c.Result.Ruling)
	}
	fmt.Fprintln(report.TermSafe(w), line)
}

// ResumingNote is what an offline evolution that resumes at epoch n
// (OfflineResumesAt) says before its replays start.
func ResumingNote(n int) string {
	done := "epoch 1"
	if n > 2 {
		done = fmt.Sprintf("epochs 1–%d", n-1)
	}
	return fmt.Sprintf("resuming at epoch %d (%s checkpointed)", n, done)
}
