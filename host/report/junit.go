package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// The names of the two JUnit test suites.
const (
	JUnitGatesSuite     = "sextant gates"
	JUnitRegressedSuite = "sextant regressed tasks"
)

// WriteJUnit writes r as JUnit XML, the common schema CI systems read
// (Jenkins, GitLab, GitHub test reporters, Azure DevOps).
//
// # Notes
//
//   - <testsuites> holds two suites: JUnitGatesSuite with one <testcase> per
//     gate, and JUnitRegressedSuite with one <testcase> per regressed task.
//     The regressed suite is written even when empty (tests="0") so CI
//     dashboards keep a stable set of suites.
//   - A failing gate has a <failure> whose message is its first reason and
//     whose text is all its reasons, one per line.
//   - A gate asking for review is <skipped>: it neither passed nor failed,
//     and a person decides. Marking it a failure would turn every review red
//     in CI; the exit code (3) already stops the job.
//   - A gate with an unknown ruling is an <error>.
//   - Each regressed task has a <failure> listing its flips.
//   - Every time attribute is "0" and there is no timestamp or hostname, so
//     the same replay gives the same file. The classname is the pipeline.
//   - The gates suite carries <properties>: pipeline, baseline, candidate,
//     tasks, fidelity, ruling and exit code.
func WriteJUnit(w io.Writer, r *Report) error {
	doc := toJUnit(r)
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("write junit report: %w", err)
	}
	if _, err := io.WriteString(w, xml.Header+string(out)+"\n"); err != nil {
		return fmt.Errorf("write junit report: %w", err)
	}
	return nil
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
}

// junitProperties is a pointer in junitSuite because the schema forbids an
// empty <properties>.
type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func toJUnit(r *Report) junitSuites {
	class := r.Pipeline
	if class == "" {
		class = "sextant"
	}
	gates := junitSuite{
		Name: JUnitGatesSuite, Time: "0",
		Properties: &junitProperties{[]junitProperty{
			{"pipeline", r.Pipeline},
			{"baseline", strategyLabel(r.Baseline)},
			{"baseline.hash", r.Baseline.Hash},
			{"candidate", strategyLabel(r.Candidate)},
			{"candidate.hash", r.Candidate.Hash},
			{"tasks", strconv.Itoa(r.Tasks)},
			{"fidelity", general(r.Fidelity)},
			{"ruling", string(r.Ruling)},
			{"exit_code", strconv.Itoa(r.ExitCode)},
		}},
		Cases: []junitCase{},
	}
	for _, g := range r.Gates {
		c := junitCase{Name: g.Name, Classname: class, Time: "0"}
		reasons := strings.Join(g.Reasons, "\n")
		var out []string
		if len(g.Reasons) > 0 {
			out = append(out, reasons)
		}
		if len(g.Metrics) > 0 {
			out = append(out, "metrics: "+gateMetrics(g.Metrics))
		}
		c.SystemOut = strings.Join(out, "\n")
		switch g.Ruling {
		case sdk.Pass:
		case sdk.Review:
			msg := "needs review"
			if fr := firstReason(g); fr != "" {
				msg += ": " + fr
			}
			c.Skipped = &junitMessage{Message: msg}
			gates.Skipped++
		case sdk.Fail:
			msg := firstReason(g)
			if msg == "" {
				msg = "gate failed"
			}
			c.Failure = &junitMessage{Message: msg, Type: "gate", Text: reasons}
			gates.Failures++
		default:
			c.Error = &junitMessage{Message: fmt.Sprintf("gate gave no ruling (got %q)", string(g.Ruling)), Type: "gate"}
			gates.Errors++
		}
		gates.Cases = append(gates.Cases, c)
		gates.Tests++
	}

	flips := map[string][]string{}
	for _, f := range sortedFlips(r.Flipped) {
		flips[f.Task] = append(flips[f.Task], fmt.Sprintf("%s: %s -> %s", f.Metric, f.From, f.To))
	}
	regressed := junitSuite{Name: JUnitRegressedSuite, Time: "0", Cases: []junitCase{}}
	msg := fmt.Sprintf("passed under baseline %s, failed under candidate %s",
		strategyLabel(r.Baseline), strategyLabel(r.Candidate))
	for _, task := range sortedTasks(r.Regressed) {
		regressed.Cases = append(regressed.Cases, junitCase{
			Name: task, Classname: class, Time: "0",
			Failure: &junitMessage{Message: msg, Type: "regression", Text: strings.Join(flips[task], "\n")},
		})
		regressed.Tests++
		regressed.Failures++
	}

	doc := junitSuites{Name: "sextant", Time: "0", Suites: []junitSuite{gates, regressed}}
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
	}
	return doc
}
