package report

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestMatrixKinds: a row's filters follow from its two cells.
func TestMatrixKinds(t *testing.T) {
	pass, fail := TaskCell{Pass: true}, TaskCell{}
	broken := TaskCell{Error: "step reply: timed out"}
	for _, c := range []struct {
		row  TaskRow
		want []string
	}{
		{TaskRow{Baseline: pass, Candidate: fail}, []string{RowRegressed}},
		{TaskRow{Baseline: fail, Candidate: pass, OutputDiffers: true}, []string{RowImproved, RowDiffers}},
		{TaskRow{Baseline: pass, Candidate: broken, OutputDiffers: true}, []string{RowRegressed, RowDiffers, RowError}},
		{TaskRow{Baseline: broken, Candidate: fail}, []string{RowError}},
		{TaskRow{Baseline: pass, Candidate: pass}, nil},
	} {
		if got := c.row.Kinds(); !slices.Equal(got, c.want) {
			t.Errorf("%+v: kinds %v, want %v", c.row, got, c.want)
		}
	}
}

// TestMatrixCap: a matrix larger than maxMatrixRows keeps every task with
// something to see, counts every task in its filters, and says how many
// it left out.
func TestMatrixCap(t *testing.T) {
	var rows []TaskRow
	for i := range maxMatrixRows + 50 {
		rows = append(rows, TaskRow{Task: fmt.Sprintf("t-%05d", i), Baseline: TaskCell{Pass: true}, Candidate: TaskCell{Pass: true}})
	}
	rows[len(rows)-1].Candidate.Pass = false // the last task regressed
	rows[len(rows)-2].OutputDiffers = true
	m := htmlMatrixOf(rows)
	if len(m.Rows) != maxMatrixRows || m.More != 50 || m.Total != len(rows) {
		t.Fatalf("%d rows, %d more, total %d", len(m.Rows), m.More, m.Total)
	}
	if m.Rows[0].Task != rows[len(rows)-1].Task || m.Rows[0].Class != RowRegressed || m.Rows[1].Class != RowDiffers {
		t.Fatalf("first rows %+v, %+v: want the regressed task, then the differing one", m.Rows[0], m.Rows[1])
	}
	want := map[string]int{"all": len(rows), RowRegressed: 1, RowImproved: 0, RowDiffers: 1, RowError: 0}
	for _, f := range m.Filters {
		if f.Count != want[f.ID] {
			t.Errorf("filter %s counts %d, want %d", f.ID, f.Count, want[f.ID])
		}
	}
	out := string(render(t, WriteHTML, &Report{Matrix: rows}))
	if !strings.Contains(out, "… and 50 more tasks not shown.") {
		t.Error("the HTML report does not say what it left out")
	}
}

// TestMatrixHTML: every row of failingReport's matrix is in the HTML
// report once, with the classes its filters select on, and every filter
// has its CSS rule.
func TestMatrixHTML(t *testing.T) {
	r := failingReport()
	out := string(render(t, WriteHTML, r))
	for _, row := range r.Matrix {
		re := regexp.MustCompile(`<tr(?: class="([a-z ]+)")?><td><code>` + regexp.QuoteMeta(row.Task) + `</code></td><td class="(?:pass|fail)"`)
		got := re.FindAllStringSubmatch(out, -1)
		if len(got) != 1 {
			t.Fatalf("task %s: %d rows", row.Task, len(got))
		}
		if got[0][1] != strings.Join(row.Kinds(), " ") {
			t.Errorf("task %s: classes %q, want %v", row.Task, got[0][1], row.Kinds())
		}
	}
	for _, k := range []string{RowRegressed, RowImproved, RowDiffers, RowError} {
		if !strings.Contains(out, "#mf-"+k+":checked~table tbody tr:not(."+k+")") {
			t.Errorf("no CSS rule for the %s filter", k)
		}
	}
	if !strings.Contains(out, `title="step &#34;reply&#34;: provider &lt;default&gt; timed out &amp; gave up"`) {
		t.Error("the failed replay's error is not shown (escaped)")
	}
}

// TestForestLabels: the plot's columns grow with their longest text, so
// nothing is clipped; an overlong name is cut, whole in the row's title;
// p-values read as the CLI prints them.
func TestForestLabels(t *testing.T) {
	long := "reward." + strings.Repeat("helpfulness_", 6)
	short := forestModel([]sdk.Metric{{Name: "success", Kind: "binary", P: 0.5}})
	ch := forestModel([]sdk.Metric{
		{Name: long, Kind: "continuous", Effect: 0.1, CILow: 0.05, CIHigh: 0.2, P: 0.00002, HigherIsBetter: true},
		{Name: "success", Kind: "binary", P: 0.5},
	})
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if num(ch.LabelX) <= num(short.LabelX) || num(ch.Width) <= num(short.Width) {
		t.Fatalf("label column ends at %s (width %s), as with short names (%s, %s)", ch.LabelX, ch.Width, short.LabelX, short.Width)
	}
	r := ch.Rows[0]
	if len([]rune(r.Label)) != maxLabel || !strings.HasSuffix(r.Label, "…") || !strings.HasPrefix(r.Title, long+":") {
		t.Errorf("label %q, title %q", r.Label, r.Title)
	}
	if !strings.HasSuffix(r.Text, " p<0.001") || !strings.HasSuffix(ch.Rows[1].Text, " p=0.500") {
		t.Errorf("p-values: %q, %q", r.Text, ch.Rows[1].Text)
	}
	svg := string(ForestSVG([]sdk.Metric{{Name: "<b>x</b>"}}))
	if strings.Contains(svg, "<b>") || !strings.HasPrefix(svg, `<svg class="forest"`) {
		t.Errorf("forest svg: %s", svg)
	}
}

// BenchmarkWriteHTMLMatrix renders the HTML report of a 10 000-task
// comparison: the matrix sorts every row and writes the first 1000.
func BenchmarkWriteHTMLMatrix(b *testing.B) {
	r := failingReport()
	r.Matrix = nil
	for i := range 10_000 {
		r.Matrix = append(r.Matrix, TaskRow{Task: fmt.Sprintf("t-%05d", i),
			Baseline:      TaskCell{Pass: i%7 != 0, Score: 1, CostUSD: 0.002, LatencyMS: 800},
			Candidate:     TaskCell{Pass: i%5 != 0, Score: 0.5, CostUSD: 0.003, LatencyMS: 1200},
			OutputDiffers: i%3 == 0})
	}
	var buf strings.Builder
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := WriteHTML(&buf, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/report")
}

// BenchmarkForestSVG draws the plot of ten metrics.
func BenchmarkForestSVG(b *testing.B) {
	ms := failingReport().Metrics
	ms = append(ms, ms...)
	ms = append(ms, ms[:2]...)
	b.ReportAllocs()
	for b.Loop() {
		_ = ForestSVG(ms)
	}
}
