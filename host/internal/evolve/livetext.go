package evolve

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/termtext"
)

// WriteText writes the live version of p as sextant strategy live prints
// it: the version and since when, a note when runs do not use it, and the
// moves, oldest first.
func (l *Live) WriteText(w io.Writer, p *pipeline.Pipeline) error {
	w = report.TermSafe(w)
	v := l.Live
	fmt.Fprintf(w, "%s: %s %s is live (%s, hash %s)\n", l.Pipeline, v.Name, v.Version, v.File, v.Hash[:min(12, len(v.Hash))])
	if v.Action == MoveConfigured {
		fmt.Fprintf(w, "as configured in %s: nothing promoted yet\n", p.File)
	} else {
		fmt.Fprintf(w, "since %s: %s by %s", v.At.Format(time.RFC3339), v.Action, v.By)
		if v.Reason != "" {
			fmt.Fprintf(w, ": %s", v.Reason)
		}
		fmt.Fprintln(w)
	}
	l.WritePinned(w, p)
	if len(l.History) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tACTION\tVERSION\tFROM\tBY\tREASON")
	for _, h := range l.History {
		at := "-"
		if !h.At.IsZero() {
			at = h.At.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", at, termtext.Cell(string(h.Action)), termtext.Cell(h.Version), termtext.Cell(dash(h.From)), termtext.Cell(dash(h.By)), termtext.Cell(h.Reason))
	}
	return tw.Flush()
}

// WriteMoved writes how a move (promote, rollback) left the live version
// of p, which was before's.
func (l *Live) WriteMoved(w io.Writer, before *Live, p *pipeline.Pipeline) {
	w = report.TermSafe(w)
	v := l.Live
	if before.Live.Version == v.Version && before.Live.Hash == v.Hash {
		fmt.Fprintf(w, "%s: %s %s is live already\n", p.Name, v.Name, v.Version)
	} else {
		fmt.Fprintf(w, "%s: %s %s is live (was %s; %s by %s)\n", p.Name, v.Name, v.Version, v.From, v.Action, v.By)
	}
	l.WritePinned(w, p)
}

// WritePinned says when the runs of p do not use the live version.
func (l *Live) WritePinned(w io.Writer, p *pipeline.Pipeline) {
	w = report.TermSafe(w)
	switch {
	case l.Pinned && l.Runs != l.Live:
		fmt.Fprintf(w, "note: %s pins its strategy ([strategy] pin = true): runs keep using %s %s until the pin is removed\n", p.File, l.Runs.Name, l.Runs.Version)
	case l.Runs != l.Live:
		fmt.Fprintf(w, "note: %s now configures strategy %s, so runs use it, not the live %s %s\n", p.File, l.Runs.Name, l.Live.Name, l.Live.Version)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
