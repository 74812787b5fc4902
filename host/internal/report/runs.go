package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/termtext"
)

// WriteResult writes a run's result as sextant run, resume, send and retry
// print it: status, steps and cost, actions, the output of a completed run,
// each question a waiting run asks with the command that answers it, and
// what else it waits for. storeFlag is the " --store DIR" a command run
// from the same directory needs ("" when it finds the store itself).
func WriteResult(w io.Writer, res *run.Result, storeFlag string) {
	w = termSafe{w} // store text: see termSafe
	fmt.Fprintf(w, "task %s %s after %d steps (%d tokens, $%.4f)\n", res.Task, res.Status, res.Steps, res.Tokens, res.CostUSD)
	for _, act := range res.Actions {
		fmt.Fprintf(w, "action %s: %s (%s)\n", act.Action, act.Decision, act.Reason)
	}
	if res.Status == store.StatusCompleted && len(res.Output) > 0 {
		if b, err := json.Marshal(res.Output); err == nil {
			fmt.Fprintf(w, "output: %s\n", b)
		}
	}
	for _, q := range res.Waiting {
		question, first, rest := splitHint(q.Question)
		fmt.Fprintf(w, "waiting at %s: %s\n", q.Node, question)
		fmt.Fprintf(w, "  continue: sextant resume %s --set %s%s%s\n", ShellQuote(res.Task), first, storeFlag, rest)
	}
	WriteWaits(w, res.Waits)
}

// resumeHint is how the run engine ends a question with the answer it
// wants ("… — resume with --set answer=…", "--set confirm=yes|no").
const resumeHint = " — resume with --set "

// splitHint separates a waiting question from the answer it asks for:
// first is the first choice ("confirm=yes"), rest the others as a note
// ("   (or confirm=no)").
func splitHint(q string) (question, first, rest string) {
	set := "answer=…"
	if i := strings.LastIndex(q, resumeHint); i >= 0 {
		q, set = q[:i], q[i+len(resumeHint):]
	}
	k, v, _ := strings.Cut(set, "=")
	opts := strings.Split(v, "|")
	first = ShellQuote(k + "=" + opts[0])
	if len(opts) > 1 {
		var alt []string
		for _, o := range opts[1:] {
			alt = append(alt, k+"="+o)
		}
		rest = "   (or " + strings.Join(alt, ", ") + ")"
	}
	return q, first, rest
}

// WriteWaits writes what a waiting run waits for besides people (who are
// written as questions), and when the next timer is due.
func WriteWaits(w io.Writer, ws []store.Wait) {
	w = termSafe{w} // store text: see termSafe
	var next time.Time
	for _, wt := range ws {
		if wt.Kind == store.WaitHuman {
			continue
		}
		fmt.Fprintf(w, "waiting for %s\n", wt)
		if !wt.Due.IsZero() && wt.Error == "" && (next.IsZero() || wt.Due.Before(next)) {
			next = wt.Due
		}
	}
	if !next.IsZero() {
		fmt.Fprintf(w, "next timer due %s (sextant resume TASK fires it then)\n", next.UTC().Format(time.RFC3339Nano))
	}
}

// WriteSignal writes who received the signal name: each task's status,
// a run that goes on in the process holding the store as running.
func WriteSignal(w io.Writer, name string, results []*run.Result) {
	w = termSafe{w} // store text: see termSafe
	fmt.Fprintf(w, "signal %q received by %d task(s)\n", name, len(results))
	for _, res := range results {
		if res.Status == store.StatusRunning {
			fmt.Fprintf(w, "task %s running (in the process that holds the store)\n", res.Task)
			continue
		}
		fmt.Fprintf(w, "task %s %s after %d steps\n", res.Task, res.Status, res.Steps)
	}
}

// WriteCancelled writes what sextant cancel prints of a task it
// cancelled: its id and what its cancel recorded, as the store or the
// server holding it said them (escaped: see termSafe).
func WriteCancelled(w io.Writer, res *run.Result) {
	fmt.Fprintf(termSafe{w}, "task %s %s\n", res.Task, res.Error)
}

// WriteDelivered writes what sextant send prints of message name
// delivered to a run that goes on elsewhere: in the process that holds
// the store, or on a Temporal worker, whose note (res.Error) says what
// becomes of it (escaped: see termSafe).
func WriteDelivered(w io.Writer, name string, res *run.Result) {
	note := cmp.Or(res.Error, "its run goes on in the process that holds the store")
	fmt.Fprintf(termSafe{w}, "message %q delivered to task %s; %s\n", name, res.Task, note)
}

// WriteSet writes what sextant set prints of a task whose variables
// names it set: its id and status as the store or the server holding it
// said them (escaped: see termSafe).
func WriteSet(w io.Writer, res *run.Result, names []string) {
	fmt.Fprintf(termSafe{w}, "task %s %s: set %s\n", res.Task, res.Status, strings.Join(names, ", "))
}

// TaskDetail is what an operator needs of a task in the last column of
// sextant runs: what a waiting task waits for, where an incident stopped,
// who cancelled, what resumes an interrupted run.
func TaskDetail(t *store.Task) string {
	switch t.Status {
	case store.StatusInterrupted:
		return fmt.Sprintf("owner %s is gone: sextant resume %s", t.Owner, ShellQuote(t.ID))
	case store.StatusIncident:
		if t.Incident != nil {
			return "incident " + t.Incident.String()
		}
	case store.StatusCancelled:
		if c := t.Cancelled; c != nil {
			return cancelText(c)
		}
	}
	if len(t.Waits) > 0 {
		return WaitsSummary(t.Waits)
	}
	return ""
}

func cancelText(c *store.Cancellation) string {
	if c.Reason == "" {
		return "cancelled by " + c.By
	}
	return "cancelled by " + c.By + ": " + c.Reason
}

// WriteOperated adds to sextant show what an operator needs of a task
// that is not simply running, waiting or done.
func WriteOperated(w io.Writer, t *store.Task) {
	switch {
	case t.Status == store.StatusInterrupted:
		fmt.Fprintf(w, "interrupted: owner %s is gone\n  continue: sextant resume %s\n", t.Owner, ShellQuote(t.ID))
	case t.Status == store.StatusIncident && t.Incident != nil:
		fmt.Fprintf(w, "incident (%s) at %s\n  continue: sextant retry %s [--set NAME=VALUE]...\n", t.Incident.Kind, t.Incident, ShellQuote(t.ID))
	case t.Status == store.StatusCancelled && t.Cancelled != nil:
		fmt.Fprintf(w, "%s at %s\n", cancelText(t.Cancelled), t.Cancelled.At.UTC().Format(time.RFC3339))
	}
}

// WriteIncidents writes the table sextant incidents prints: each task
// in an incident with where it stopped and why.
func WriteIncidents(w io.Writer, tasks []store.Task) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) // store text: cells are Cell-escaped
	fmt.Fprintln(tw, "TASK\tPIPELINE\tKIND\tWHERE\tERROR")
	for _, t := range tasks {
		inc := t.Incident
		if inc == nil {
			inc = &store.Incident{}
		}
		where := inc.Node
		if inc.Position != "" {
			where = inc.Position + " " + inc.Node
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termtext.Cell(t.ID), termtext.Cell(t.Pipeline), termtext.Cell(string(inc.Kind)), termtext.Cell(where), termtext.Cell(Clip(inc.Error, 120)))
	}
	return tw.Flush()
}

// ShellQuote quotes s for a POSIX shell when it needs it, for the
// commands a report tells the user to run.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%…", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
