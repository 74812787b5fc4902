package report_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/report"
)

// TestJSONMatrixReadsAsAPITasks: the JSON report's matrix decodes with
// the serve API's own type for a comparison's tasks (evolve.TaskVerdict),
// every value where the API puts it.
func TestJSONMatrixReadsAsAPITasks(t *testing.T) {
	r := &report.Report{Matrix: []report.TaskRow{
		{Task: "t-2", OutputDiffers: true,
			Baseline:  report.TaskCell{Pass: true, Score: 1, CostUSD: 0.002, LatencyMS: 840, Output: "aa"},
			Candidate: report.TaskCell{Score: -0.5, CostUSD: 0.001, LatencyMS: 1250, Output: "bb", Error: "timed out"}},
		{Task: "t-1", Baseline: report.TaskCell{Output: "cc"}, Candidate: report.TaskCell{Pass: true, Score: 0.25, Output: "cc"}},
	}}
	var b bytes.Buffer
	if err := report.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Matrix []evolve.TaskVerdict `json:"matrix"`
	}
	dec := json.NewDecoder(&b)
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Matrix) != 2 || got.Matrix[0].Task != "t-1" || got.Matrix[1].Task != "t-2" {
		t.Fatalf("matrix = %+v, want t-1 then t-2", got.Matrix)
	}
	one, two := got.Matrix[0], got.Matrix[1]
	if one.Flip != evolve.FlipImproved || !one.Candidate.Success || one.Candidate.Reward != 0.25 || one.OutputDiffers ||
		one.BaselineRun.Output != "cc" || one.CandidateRun.Output != "cc" {
		t.Errorf("t-1 = %+v", one)
	}
	if two.Flip != evolve.FlipRegressed || !two.Baseline.Success || two.Baseline.CostUSD != 0.002 || two.Candidate.Reward != -0.5 ||
		two.BaselineRun.LatencyMS != 840 || two.CandidateRun.LatencyMS != 1250 || two.CandidateRun.Error != "timed out" ||
		two.BaselineRun.Output != "aa" || two.CandidateRun.Output != "bb" || !two.OutputDiffers {
		t.Errorf("t-2 = %+v", two)
	}
}

// TestJSONNoMatrix: a report without a matrix has no matrix key, so
// consumers of the earlier reports see the same file.
func TestJSONNoMatrix(t *testing.T) {
	var b bytes.Buffer
	if err := report.WriteJSON(&b, &report.Report{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `"matrix"`) {
		t.Fatalf("empty report has a matrix key:\n%s", b.String())
	}
}

// TestMarkdownTasksCap: the Markdown tasks table lists only the rows with
// something to see, regressed first, at most 50, and says how many it
// left out.
func TestMarkdownTasksCap(t *testing.T) {
	pass, fail := report.TaskCell{Pass: true, Score: 1}, report.TaskCell{}
	var rows []report.TaskRow
	for i := range 60 {
		rows = append(rows, report.TaskRow{Task: "same-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Baseline: pass, Candidate: pass})
		rows = append(rows, report.TaskRow{Task: "reg-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Baseline: pass, Candidate: fail})
	}
	rows = append(rows, report.TaskRow{Task: "imp", Baseline: fail, Candidate: pass})
	var b bytes.Buffer
	if err := report.WriteMarkdown(&b, &report.Report{Matrix: rows}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"### Tasks (61 of 121)", "… and 11 more."} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "| regressed |"); n != 50 {
		t.Errorf("%d regressed rows, want 50 (regressed rank first)", n)
	}
	if strings.Contains(md, "`same-") || strings.Contains(md, "`imp`") {
		t.Errorf("unchanged or capped rows shown:\n%s", md)
	}
	b.Reset()
	if err := report.WriteMarkdown(&b, &report.Report{Matrix: rows[:1]}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "### Tasks") {
		t.Errorf("a matrix with nothing to see has a tasks table:\n%s", b.String())
	}
}

// TestTextTaskCounts: the terminal summary counts the matrix's classes
// on one line, and has none without a matrix.
func TestTextTaskCounts(t *testing.T) {
	rows := []report.TaskRow{
		{Task: "a", Baseline: report.TaskCell{Pass: true}, OutputDiffers: true},
		{Task: "b", Candidate: report.TaskCell{Pass: true}},
		{Task: "c", Candidate: report.TaskCell{Error: "boom"}},
		{Task: "d"},
	}
	var b bytes.Buffer
	if err := report.WriteText(&b, &report.Report{Matrix: rows}); err != nil {
		t.Fatal(err)
	}
	if want := "tasks: 1 regressed, 1 improved, 1 different output, 1 error (of 4 compared)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	if err := report.WriteText(&b, &report.Report{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "tasks: ") {
		t.Errorf("text without a matrix counts tasks:\n%s", b.String())
	}
}
