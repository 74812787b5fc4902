package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

// WriteFunc renders a Report in one format.
type WriteFunc func(w io.Writer, r *Report) error

// The format names accepted by --report FORMAT=PATH.
const (
	FormatHTML     = "html"
	FormatJSON     = "json"
	FormatJUnit    = "junit"
	FormatMarkdown = "md"
	FormatText     = "text"
)

var writers = map[string]WriteFunc{
	FormatHTML:     WriteHTML,
	FormatJSON:     WriteJSON,
	FormatJUnit:    WriteJUnit,
	FormatMarkdown: WriteMarkdown,
	FormatText:     func(w io.Writer, r *Report) error { return WriteText(w, r) },
}

// Formats returns the format names Lookup accepts, sorted.
func Formats() []string {
	names := make([]string, 0, len(writers))
	for n := range writers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the writer for a format name. An unknown name is an
// sdk.ErrInvalid error naming the near miss. The text format written by a
// WriteFunc never has colour.
func Lookup(format string) (WriteFunc, error) {
	if w, ok := writers[format]; ok {
		return w, nil
	}
	return nil, sdk.Errorf(sdk.CodeInvalid, "unknown report format %q%s; known formats: %s",
		format, suggest.Hint(format, Formats()), strings.Join(Formats(), ", "))
}

// ParseSpec splits a --report value FORMAT=PATH and checks the format.
func ParseSpec(spec string) (format, path string, err error) {
	format, path, ok := strings.Cut(spec, "=")
	if !ok || format == "" || path == "" {
		return "", "", sdk.Errorf(sdk.CodeInvalid, "report %q: want FORMAT=PATH, as in junit=report.xml", spec)
	}
	if _, err := Lookup(format); err != nil {
		return "", "", fmt.Errorf("report %q: %w", spec, err)
	}
	return format, path, nil
}

// shortHash shortens a content hash for people; machine formats keep it whole.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// strategyLabel is "name version (hash)" with what is known.
func strategyLabel(s Strategy) string {
	parts := make([]string, 0, 3)
	if s.Name != "" {
		parts = append(parts, s.Name)
	}
	if s.Version != "" {
		parts = append(parts, s.Version)
	}
	if s.Hash != "" {
		parts = append(parts, "("+shortHash(s.Hash)+")")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// rulingWord is the ruling as shown to people: failures and reviews in
// capitals so they stand out without colour.
func rulingWord(r sdk.Ruling) string {
	switch r {
	case sdk.Fail, sdk.Review:
		return strings.ToUpper(string(r))
	case "":
		return "-"
	}
	return string(r)
}

// sortedDivergences, sortedFlips and sortedTasks return sorted copies: task
// lists are filled by concurrent workers and must not reorder a report.
func sortedDivergences(ds []Divergence) []Divergence {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b Divergence) int { return strings.Compare(a.Task, b.Task) })
	return out
}

func sortedFlips(fs []Flip) []Flip {
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b Flip) int {
		if c := strings.Compare(a.Task, b.Task); c != 0 {
			return c
		}
		return strings.Compare(a.Metric, b.Metric)
	})
	return out
}

func sortedTasks(ts []string) []string {
	out := slices.Clone(ts)
	slices.Sort(out)
	return out
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// flipGroup counts the flips of one metric in one direction.
type flipGroup struct {
	Metric, From, To string
	Count            int
}

// groupFlips counts flips by metric and direction, ordered by metric, then
// by count (most first), then by direction.
func groupFlips(fs []Flip) []flipGroup {
	idx := map[[3]string]int{}
	var out []flipGroup
	for _, f := range fs {
		k := [3]string{f.Metric, f.From, f.To}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, flipGroup{Metric: f.Metric, From: f.From, To: f.To})
		}
		out[i].Count++
	}
	slices.SortFunc(out, func(a, b flipGroup) int {
		if c := strings.Compare(a.Metric, b.Metric); c != 0 {
			return c
		}
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		if c := strings.Compare(a.From, b.From); c != 0 {
			return c
		}
		return strings.Compare(a.To, b.To)
	})
	return out
}

// gateCounts counts gates by ruling.
func gateCounts(gs []GateResult) (pass, review, fail, other int) {
	for _, g := range gs {
		switch g.Ruling {
		case sdk.Pass:
			pass++
		case sdk.Review:
			review++
		case sdk.Fail:
			fail++
		default:
			other++
		}
	}
	return
}

// verdictSummary is the explanation after the verdict, e.g.
// "1 of 8 gates failed, 1 needs review".
func verdictSummary(r *Report) string {
	_, review, fail, other := gateCounts(r.Gates)
	var parts []string
	if fail > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d %s failed", fail, len(r.Gates), plural(len(r.Gates), "gate", "gates")))
	}
	if review > 0 {
		parts = append(parts, fmt.Sprintf("%d %s review", review, plural(review, "needs", "need")))
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("%d gave no ruling", other))
	}
	if len(parts) == 0 && len(r.Gates) == 0 && len(r.GatesNotRun) > 0 {
		parts = append(parts, fmt.Sprintf("self-replay, %d %s not run", len(r.GatesNotRun), plural(len(r.GatesNotRun), "gate", "gates")))
	} else if len(parts) == 0 && len(r.Gates) == 0 {
		parts = append(parts, "no gates")
	} else if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%d of %d %s passed", len(r.Gates), len(r.Gates), plural(len(r.Gates), "gate", "gates")))
	}
	if n := len(r.Regressed); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s regressed", n, plural(n, "task", "tasks")))
	}
	if fidelityFailed(r) {
		parts = append(parts, fmt.Sprintf("fidelity %s below min_fidelity %s", percent(r.Fidelity), percent(r.MinFidelity)))
	}
	return strings.Join(parts, ", ")
}

// fidelityFailed reports whether the self-replays' fidelity failed the
// verdict: some were counted and too few reproduced.
func fidelityFailed(r *Report) bool {
	return r.SelfReplays > 0 && r.Fidelity < r.MinFidelity
}

// fidelityText is the fidelity as a percentage, or n/a when no self-replay
// was counted.
func fidelityText(r *Report) string {
	if r.SelfReplays == 0 && r.Fidelity == 0 {
		return "n/a"
	}
	return percent(r.Fidelity)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// truncate shortens s to at most n runes, marking the cut with "…", and
// puts it on one line.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// firstReason is a gate's first reason on one line, or "".
func firstReason(g GateResult) string {
	if len(g.Reasons) == 0 {
		return ""
	}
	return strings.Join(strings.Fields(g.Reasons[0]), " ")
}
