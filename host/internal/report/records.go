package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/termtext"
)

// WriteTasks writes tasks as the table sextant runs prints: id, status,
// pipeline, strategy version, creation time, tags, and detail's text (what
// a task waits for, where it stopped) in a last column left off the lines
// where it is empty, so no line ends in blanks. A nil detail writes none.
func WriteTasks(w io.Writer, tasks []store.Task, detail func(*store.Task) string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) // store text: cells are Cell-escaped
	fmt.Fprintln(tw, "TASK\tSTATUS\tPIPELINE\tSTRATEGY\tCREATED\tTAGS\tWAITING FOR")
	for i := range tasks {
		t := &tasks[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", termtext.Cell(t.ID), termtext.Cell(string(t.Status)), termtext.Cell(t.Pipeline), termtext.Cell(t.Strategy.Version),
			t.Created.UTC().Format(time.RFC3339), termtext.Cell(strings.Join(t.Tags, ",")))
		if detail != nil {
			if d := detail(t); d != "" {
				fmt.Fprintf(tw, "\t%s", termtext.Cell(d))
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WaitsSummary is the first thing a task waits for, and how many more.
func WaitsSummary(ws []store.Wait) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0].String()
	}
	return fmt.Sprintf("%s (+%d more)", ws[0], len(ws)-1)
}

// WriteStrategyLog writes a strategy's promoted versions as the table
// sextant strategy log prints: version, parent, hash (12 digits), author
// and creation time.
func WriteStrategyLog(w io.Writer, recs []store.StrategyRecord) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tPARENT\tHASH\tAUTHOR\tCREATED")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termtext.Cell(r.Version), termtext.Cell(r.Parent), termtext.Cell(r.Hash[:min(12, len(r.Hash))]), termtext.Cell(r.Author), r.Created.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}
