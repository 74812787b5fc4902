package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/termtext"
)

// TreeOptions says what [WriteTree] adds to a task's span trees.
type TreeOptions struct {
	// Calls are the task's recordings (sextant show --full): each is
	// printed under the span that made or used it, and the tool recordings
	// no span points at after the trees. Nil prints the spans only.
	Calls []*store.Recording
	// Operated, when set, writes what an operator needs of a task that is
	// not simply running, waiting or done, after the task's header. It is
	// the caller's because its hints name the caller's commands.
	Operated func(io.Writer, *store.Task)
}

// WriteTree writes a task as sextant show prints it: its header (status,
// pipeline, strategy, tags, waits, input and truth clipped), each
// execution's spans as an indented tree with durations, tokens and cost,
// and its rewards.
func WriteTree(w io.Writer, t *store.Tree, opt TreeOptions) {
	w = termSafe{w}
	tw := newTreeWriter(w, opt.Calls)
	task := &t.Task
	fmt.Fprintf(w, "task %s  %s  pipeline %s  strategy %s %s\n", task.ID, task.Status, task.Pipeline, task.Strategy.Name, task.Strategy.Version)
	if len(task.Tags) > 0 {
		fmt.Fprintf(w, "tags: %s\n", strings.Join(task.Tags, ", "))
	}
	for _, wt := range task.Waits {
		fmt.Fprintf(w, "waiting for %s\n", wt)
	}
	if opt.Operated != nil {
		opt.Operated(w, task)
	}
	if len(task.Input) > 0 {
		fmt.Fprintf(w, "input: %s\n", Clip(string(task.Input), 200))
	}
	if len(task.Truth) > 0 {
		fmt.Fprintf(w, "truth: %s\n", Clip(string(task.Truth), 200))
	}
	for _, ex := range t.Executions {
		tw.execution(ex)
	}
	tw.toolRecords()
	if len(t.Rewards) > 0 {
		fmt.Fprintln(w, "\nrewards:")
		for _, r := range t.Rewards {
			target := ""
			if r.SpanID != "" {
				target = " span " + r.SpanID
			}
			fmt.Fprintf(w, "  #%d %+g%s %s %s\n", r.Seq, r.Value, target, strings.Join(r.Tags, ","), r.Note)
		}
	}
}

// treeWriter writes span trees with the recordings their spans point at.
type treeWriter struct {
	w      io.Writer
	calls  []*store.Recording
	byHash map[string]*store.Recording
	humans map[string][]*store.Recording // by step
}

func newTreeWriter(w io.Writer, calls []*store.Recording) *treeWriter {
	tw := &treeWriter{w: w, calls: calls, byHash: map[string]*store.Recording{}, humans: map[string][]*store.Recording{}}
	for _, r := range calls {
		tw.byHash[r.Hash] = r
		if r.Kind == store.RecordHuman {
			var q struct{ Step string }
			if json.Unmarshal(r.Request, &q) == nil {
				tw.humans[q.Step] = append(tw.humans[q.Step], r)
			}
		}
	}
	return tw
}

// execution writes one execution's line and its spans as trees: a span
// whose parent is not among them is a root.
func (tw *treeWriter) execution(ex store.ExecutionTree) {
	e := ex.Execution
	fmt.Fprintf(tw.w, "\nexecution %s  %s  %s", e.ID, e.Mode, e.Status)
	if e.Error != "" {
		fmt.Fprintf(tw.w, "  error: %s", e.Error)
	}
	fmt.Fprintln(tw.w)
	ids := map[string]bool{}
	for _, sp := range ex.Spans {
		ids[sp.SpanID] = true
	}
	children := map[string][]store.Span{}
	var roots []store.Span
	for _, sp := range ex.Spans {
		if sp.ParentSpanID == "" || !ids[sp.ParentSpanID] {
			roots = append(roots, sp)
		} else {
			children[sp.ParentSpanID] = append(children[sp.ParentSpanID], sp)
		}
	}
	for _, r := range roots {
		tw.span(r, 0, children)
	}
}

// span writes sp at depth, the recordings it made, then its children in
// sequence order.
func (tw *treeWriter) span(sp store.Span, depth int, children map[string][]store.Span) {
	fmt.Fprintf(tw.w, "%s%-*s %8s%s\n", strings.Repeat("  ", depth+1), 36-2*depth, sp.Name, spanDuration(sp), spanExtras(sp))
	if len(tw.calls) > 0 {
		tw.spanCalls(sp, strings.Repeat("  ", depth+3))
	}
	kids := children[sp.SpanID]
	sort.SliceStable(kids, func(i, j int) bool { return kids[i].Seq < kids[j].Seq })
	for _, k := range kids {
		tw.span(k, depth+1, children)
	}
}

// spanCalls writes the recordings span sp points at: its model or tool
// call (a tool call's person's decisions first), a refused tool call, a
// human step's answers.
func (tw *treeWriter) spanCalls(sp store.Span, indent string) {
	if v, ok := sp.LookupAttr("sextant.recording"); ok {
		for _, what := range []string{"confirm", "retry"} {
			if r := tw.byHash[store.ToolApprovalKey(v.Str(), what)]; r != nil {
				writeCall(tw.w, indent, r)
			}
		}
		if r := tw.byHash[v.Str()]; r != nil {
			writeCall(tw.w, indent, r)
		}
	} else if sp.Attr(store.AttrGenAIOperationName).Str() == "execute_tool" {
		writeRefusedCall(tw.w, indent, sp)
	}
	if v, ok := sp.LookupAttr("sextant.node"); ok && sp.Attr("sextant.step.kind").Str() == "human" {
		for _, r := range tw.humans[v.Str()] {
			writeCall(tw.w, indent, r)
		}
	}
}

// toolRecords writes the tool recordings no span points at: the tools
// each source listed for the task, and calls that started and have no
// result (the run stopped during them).
func (tw *treeWriter) toolRecords() {
	var rest []*store.Recording
	for _, r := range tw.calls {
		switch r.Kind {
		case store.RecordToolList:
			rest = append(rest, r)
		case store.RecordToolStarted:
			var m struct{ Call string }
			if json.Unmarshal(r.Response, &m) != nil || tw.byHash[m.Call] == nil {
				rest = append(rest, r)
			}
		}
	}
	if len(rest) == 0 {
		return
	}
	fmt.Fprintln(tw.w, "\ntool recordings:")
	for _, r := range rest {
		writeCall(tw.w, "  ", r)
	}
}

// writeRefusedCall writes a tool call no tool ran for (not offered, bad
// arguments, blocked by policy), from its span.
func writeRefusedCall(w io.Writer, indent string, sp store.Span) {
	block := blockWriter(w, indent)
	name := sp.Attr(run.AttrGenAIToolName).Str()
	if src := sp.Attr("sextant.tool.source").Str(); src != "" {
		name = src + "." + name
	}
	block("tool", fmt.Sprintf("%s(%s)", name, sp.Attr(run.AttrGenAIToolCallArguments).Str()))
	block("error", strings.TrimPrefix(sp.Attr(run.AttrGenAIToolCallResult).Str(), "error: "))
}

// blockWriter returns a writer of labelled, indented text blocks: the
// label before the first line, the others aligned under it.
func blockWriter(w io.Writer, indent string) func(label, text string) {
	return func(label, text string) {
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		fmt.Fprintf(w, "%s%s: %s\n", indent, label, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%s%*s  %s\n", indent, len(label), "", l)
		}
	}
}

// spanDuration is a span's duration to the microsecond, "…" while open.
func spanDuration(sp store.Span) string {
	if sp.End.IsZero() {
		return "…"
	}
	return sp.End.Sub(sp.Start).Round(time.Microsecond).String()
}

// spanExtras is what follows a span's duration: tokens, cost, whether
// replay recorded it, its id and its error.
func spanExtras(sp store.Span) string {
	var parts []string
	if v, ok := sp.LookupAttr(store.AttrGenAIUsageInputTokens); ok {
		parts = append(parts, fmt.Sprintf("in %d", v.Int()))
	}
	if v, ok := sp.LookupAttr(store.AttrGenAIUsageOutputTokens); ok {
		parts = append(parts, fmt.Sprintf("out %d", v.Int()))
	}
	if v, ok := sp.LookupAttr("sextant.cost_usd"); ok {
		parts = append(parts, fmt.Sprintf("$%.4f", v.Float()))
	}
	if v, ok := sp.LookupAttr("sextant.recorded"); ok && v.Bool() {
		parts = append(parts, "recorded")
	}
	parts = append(parts, "span "+sp.SpanID)
	if sp.Status.Code == store.CodeError {
		parts = append(parts, "ERROR: "+sp.Status.Message)
	}
	return "  " + strings.Join(parts, "  ")
}

// Clip shortens s to n runes, marking the cut with "…".
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// termSafe writes text from the store to a terminal with its control
// characters other than newline and tab shown escaped (\x1b, \u009b):
// what a model, a tool or an OTLP client wrote is shown, never obeyed as
// an escape sequence (a window title, a cleared screen, the clipboard).
type termSafe struct{ w io.Writer }

// TermSafe returns w writing as termSafe does: for a command's error,
// which may quote a tool server's stderr or an upstream's message.
func TermSafe(w io.Writer) io.Writer { return termSafe{w} }

// TermSafeOn is TermSafe(w) when on (w is a terminal), else w: a file
// or a pipe gets the bytes as they are.
func TermSafeOn(w io.Writer, on bool) io.Writer {
	if on {
		return termSafe{w}
	}
	return w
}

func (t termSafe) Write(p []byte) (int, error) {
	if !termtext.HasControl(p) && utf8.Valid(p) {
		return t.w.Write(p)
	}
	if _, err := io.WriteString(t.w, termtext.Escape(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteSafeJSON writes v to w as indented JSON with every control character
// escaped: encoding/json leaves DEL and the C1 controls (U+0080 to
// U+009F; U+009B is CSI) as they are, which a terminal obeys. They are
// written \u007f and \u0080 to \u009f, the same string to a JSON reader.
func WriteSafeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if termtext.HasControl(b) {
		var out bytes.Buffer
		for _, r := range string(b) { // json.Marshal writes valid UTF-8
			if r == 0x7f || r >= 0x80 && r <= 0x9f {
				fmt.Fprintf(&out, "\\u%04x", r)
				continue
			}
			out.WriteRune(r)
		}
		b = out.Bytes()
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
