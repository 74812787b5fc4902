package report

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// TaskRow is one task of the comparison matrix: its result under the
// baseline and under the candidate.
type TaskRow struct {
	Task                string
	Baseline, Candidate TaskCell
	// OutputDiffers says the two replays ended with different outputs.
	OutputDiffers bool
}

// TaskCell is one task's result under one strategy.
type TaskCell struct {
	// Pass is the task's success ([score] success).
	Pass bool
	// Score is its reward.
	Score     float64
	CostUSD   float64
	LatencyMS float64
	// Error is why the replay did not complete; "" when it did.
	Error string
	// Output is a digest of the replay's output ("" without one): equal
	// digests, equal outputs.
	Output string
}

// The filters of the comparison matrix, each a class of its rows.
const (
	RowRegressed = "regressed" // passed under the baseline, failed under the candidate
	RowImproved  = "improved"  // the other way round
	RowDiffers   = "differs"   // different output
	RowError     = "error"     // a replay that did not complete
)

// Kinds returns the filters row belongs to, in the order above.
func (row TaskRow) Kinds() []string {
	var k []string
	switch {
	case row.Baseline.Pass && !row.Candidate.Pass:
		k = append(k, RowRegressed)
	case !row.Baseline.Pass && row.Candidate.Pass:
		k = append(k, RowImproved)
	}
	if row.OutputDiffers {
		k = append(k, RowDiffers)
	}
	if row.Baseline.Error != "" || row.Candidate.Error != "" {
		k = append(k, RowError)
	}
	return k
}

// maxMatrixRows bounds the HTML report's matrix. Regressed, improved,
// failing and differing tasks come first, so a large replay leaves out
// the tasks with nothing to see first.
const maxMatrixRows = 1000

type htmlMatrix struct {
	Rows    []htmlMatrixRow
	Total   int
	More    int
	Filters []htmlFilter
}

type htmlFilter struct {
	ID, Label string
	Count     int
}

type htmlMatrixRow struct {
	Task, Class         string
	Baseline, Candidate htmlCell
	Output              string
}

type htmlCell struct {
	Result, Class        string
	Score, Cost, Latency string
	Error                string
}

// rank orders the matrix: regressed, improved, errors, different output,
// then the rest.
func rank(kinds []string) int {
	for i, k := range []string{RowRegressed, RowImproved, RowError, RowDiffers} {
		if slices.Contains(kinds, k) {
			return i
		}
	}
	return 4
}

// rankedRow is one row of the matrix with its filters and rank.
type rankedRow struct {
	rank  int
	row   *TaskRow
	kinds []string
}

// rankRows orders rows as every report shows them (by rank, then task)
// and counts each filter's rows.
func rankRows(rows []TaskRow) ([]rankedRow, map[string]int) {
	// Sort small records, not the rows: a 10 000-task matrix sorts fast.
	all := make([]rankedRow, len(rows))
	counts := map[string]int{}
	for i := range rows {
		k := rows[i].Kinds()
		all[i] = rankedRow{rank(k), &rows[i], k}
		for _, k := range k {
			counts[k]++
		}
	}
	slices.SortStableFunc(all, func(a, b rankedRow) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), strings.Compare(a.row.Task, b.row.Task))
	})
	return all, counts
}

func htmlMatrixOf(rows []TaskRow) htmlMatrix {
	all, counts := rankRows(rows)
	m := htmlMatrix{Total: len(rows), Filters: []htmlFilter{{"all", "all", len(rows)}}}
	for _, f := range []struct{ id, label string }{
		{RowRegressed, "regressed"}, {RowImproved, "improved"}, {RowDiffers, "different output"}, {RowError, "errors"},
	} {
		m.Filters = append(m.Filters, htmlFilter{f.id, f.label, counts[f.id]})
	}
	if len(all) > maxMatrixRows {
		m.More = len(all) - maxMatrixRows
		all = all[:maxMatrixRows]
	}
	for _, r := range all {
		out := "same"
		if r.row.OutputDiffers {
			out = "differs"
		}
		m.Rows = append(m.Rows, htmlMatrixRow{
			Task: r.row.Task, Class: strings.Join(r.kinds, " "), Output: out,
			Baseline: cellOf(r.row.Baseline), Candidate: cellOf(r.row.Candidate),
		})
	}
	return m
}

func cellOf(c TaskCell) htmlCell {
	h := htmlCell{Result: "pass", Class: "pass", Score: general(c.Score), Cost: "$" + fixedCost(c.CostUSD),
		Latency: latency(c.LatencyMS), Error: c.Error}
	if !c.Pass {
		h.Result, h.Class = "fail", "fail"
	}
	if c.Error != "" {
		h.Result = "error"
	}
	return h
}

// fixedCost writes dollars with four decimals, or six below a hundredth of
// a cent.
func fixedCost(usd float64) string {
	if usd != 0 && usd < 0.0001 && usd > -0.0001 {
		return fixed(usd, 6, false)
	}
	return fixed(usd, 4, false)
}

// latency writes milliseconds as ms below a second, seconds above.
func latency(ms float64) string {
	ms = round6(ms)
	if !finite(ms) {
		return "n/a"
	}
	if ms < 1000 {
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
}
