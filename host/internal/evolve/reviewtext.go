package evolve

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/termtext"
)

// WriteReviews writes review requests as a table (sextant review list),
// each cell escaped once (termtext.Cell): w gets it as it is.
func WriteReviews(w io.Writer, rs []ReviewRequest) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tPIPELINE\tBASELINE\tMUTATOR\tCREATED")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termtext.Cell(r.ID), termtext.Cell(string(r.Status)), termtext.Cell(r.Pipeline),
			termtext.Cell(r.Baseline.Name+" "+r.Baseline.Version), termtext.Cell(r.Mutator), r.Created.Format(time.RFC3339))
	}
	return tw.Flush()
}

// WriteDecision writes the outcome of a review decision: its id, status
// and the promoted file, if any.
func WriteDecision(w io.Writer, r *ReviewRequest) {
	w = report.TermSafe(w)
	fmt.Fprintf(w, "%s %s", r.ID, r.Status)
	if r.Path != "" {
		fmt.Fprintf(w, " → %s", r.Path)
	}
	fmt.Fprintln(w)
}

// Next is what to do with a candidate whose approval was refused as
// stale: the commands that judge it against the live version of the
// pipeline file pipelineFile, or reject it as by.
func (e *StaleError) Next(pipelineFile, by string) string {
	f := report.ShellQuote(pipelineFile)
	return fmt.Sprintf("judge it against the live version: sextant review show %s --candidate > candidate.toml && sextant gate %s --candidate candidate.toml\n(or reject it: sextant review reject %s --pipeline %s --by %s)",
		e.ID, f, e.ID, f, report.ShellQuote(by))
}
