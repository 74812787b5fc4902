package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// The names of the two JUnit test suites and the classnames of their cases.
const (
	JUnitGatesSuite = "sextant gates"
	JUnitTasksSuite = "sextant tasks"
	// JUnitGatesClass is the classname of every gate case; task cases are
	// JUnitTasksClass + "." + the pipeline's name.
	JUnitGatesClass = "sextant.gates"
	JUnitTasksClass = "sextant.tasks"
)

// WriteJUnit writes r as JUnit XML, the common schema CI systems read
// (Jenkins, GitLab, GitHub test reporters, Azure DevOps). The document
// agrees with the verdict: it has a <failure> exactly when r.ExitCode is 1,
// so no consumer fails a build sextant passed or passes one it failed.
//
// # Notes
//
//   - <testsuites> holds two suites, each with its own classname (GitLab
//     and Jenkins group by it): JUnitGatesSuite, one <testcase> per gate
//     (classname JUnitGatesClass), and JUnitTasksSuite, one <testcase> per
//     regressed task and per self-replay that diverged (classname
//     JUnitTasksClass.<pipeline>). Both are written even when empty
//     (tests="0"), so CI dashboards keep a stable set of suites.
//   - A failing gate has a <failure> whose message is its first reason and
//     whose text is all its reasons, one per line.
//   - A gate asking for review is <skipped>: it neither passed nor failed,
//     and a person decides; the exit code (3) stops the job.
//   - A regressed task is a <failure> when the verdict failed. When the
//     verdict passed (the drop is within the gates' tolerance) or waits for
//     review, the task is a passing case whose <system-out> says it
//     regressed: reported, without contradicting the verdict.
//   - A fidelity below min_fidelity is a failing "fidelity" case in the
//     gates suite whose text is the report's Reasons, and each diverged
//     self-replay is then a <failure>; with the fidelity at or above
//     min_fidelity a divergence is a passing case whose <system-out> says
//     so. A failing verdict with no failing gate or task gets a "verdict"
//     case with the failure, so failures > 0 whenever the exit code is 1.
//   - A report that contradicts itself (a failed gate, a gate with an
//     unknown ruling or a fidelity below min_fidelity, but an exit code
//     other than 1) is an
//     error: the writer does not pick a side.
//   - <testsuites> carries no skipped attribute (the Jenkins xunit schema
//     rejects it); each suite has its own.
//   - Every time attribute is "0" and there is no timestamp or hostname, so
//     the same replay gives the same file.
//   - The gates suite carries <properties>: pipeline, baseline, candidate,
//     tasks, fidelity, skipped self-replays, counted self-replays,
//     min_fidelity, ruling and exit code.
func WriteJUnit(w io.Writer, r *Report) error {
	doc, err := toJUnit(r)
	if err != nil {
		return fmt.Errorf("write junit report: %w", err)
	}
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

func toJUnit(r *Report) (junitSuites, error) {
	failed := r.ExitCode == 1
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
			{"skipped_self_replays", strconv.Itoa(r.Skipped)},
			{"self_replays", strconv.Itoa(r.SelfReplays)},
			{"min_fidelity", general(r.MinFidelity)},
			{"ruling", string(r.Ruling)},
			{"exit_code", strconv.Itoa(r.ExitCode)},
		}},
		Cases: []junitCase{},
	}
	for _, g := range r.Gates {
		c := junitCase{Name: g.Name, Classname: JUnitGatesClass, Time: "0"}
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
			if !failed {
				return junitSuites{}, fmt.Errorf("gate %q failed but the exit code is %d", g.Name, r.ExitCode)
			}
			msg := firstReason(g)
			if msg == "" {
				msg = "gate failed"
			}
			c.Failure = &junitMessage{Message: msg, Type: "gate", Text: reasons}
			gates.Failures++
		default:
			if !failed {
				return junitSuites{}, fmt.Errorf("gate %q gave no ruling (got %q) but the exit code is %d", g.Name, string(g.Ruling), r.ExitCode)
			}
			c.Error = &junitMessage{Message: fmt.Sprintf("gate gave no ruling (got %q)", string(g.Ruling)), Type: "gate"}
			gates.Errors++
		}
		gates.Cases = append(gates.Cases, c)
		gates.Tests++
	}

	taskClass := JUnitTasksClass
	if r.Pipeline != "" {
		taskClass += "." + r.Pipeline
	}
	tasks := junitSuite{Name: JUnitTasksSuite, Time: "0", Cases: []junitCase{}}
	flips := map[string][]string{}
	for _, f := range sortedFlips(r.Flipped) {
		flips[f.Task] = append(flips[f.Task], fmt.Sprintf("%s: %s -> %s", f.Metric, f.From, f.To))
	}
	msg := fmt.Sprintf("passed under baseline %s, failed under candidate %s",
		strategyLabel(r.Baseline), strategyLabel(r.Candidate))
	for _, task := range sortedTasks(r.Regressed) {
		c := junitCase{Name: task, Classname: taskClass, Time: "0"}
		detail := strings.Join(flips[task], "\n")
		if failed {
			c.Failure = &junitMessage{Message: msg, Type: "regression", Text: detail}
			tasks.Failures++
		} else {
			c.SystemOut = strings.TrimSuffix(fmt.Sprintf("regressed: %s; within what the gates allow (verdict %s)\n%s", msg, r.Ruling, detail), "\n")
		}
		tasks.Cases = append(tasks.Cases, c)
		tasks.Tests++
	}
	unfaithful := fidelityFailed(r)
	if unfaithful {
		if !failed {
			return junitSuites{}, fmt.Errorf("fidelity %s is below min_fidelity %s but the exit code is %d", percent(r.Fidelity), percent(r.MinFidelity), r.ExitCode)
		}
		msg := fmt.Sprintf("fidelity %s is below min_fidelity %s", percent(r.Fidelity), percent(r.MinFidelity))
		if len(r.Reasons) > 0 {
			msg = r.Reasons[0]
		}
		gates.Cases = append(gates.Cases, junitCase{Name: "fidelity", Classname: JUnitGatesClass, Time: "0",
			Failure: &junitMessage{Message: msg, Type: "fidelity", Text: strings.Join(r.Reasons, "\n")}})
		gates.Tests++
		gates.Failures++
	}
	for _, d := range sortedDivergences(r.Divergences) {
		text := fmt.Sprintf("expected %s, got %s", d.Expected, d.Got)
		if d.Node != "" {
			text = "at " + d.Node + ": " + text
		}
		c := junitCase{Name: d.Task + " self-replay", Classname: taskClass, Time: "0"}
		if unfaithful {
			c.Failure = &junitMessage{Message: "the replay under the recorded strategy left the recorded trace", Type: "divergence", Text: text}
			tasks.Failures++
		} else {
			c.SystemOut = fmt.Sprintf("diverged %s; fidelity %s meets min_fidelity %s", text, percent(r.Fidelity), percent(r.MinFidelity))
		}
		tasks.Cases = append(tasks.Cases, c)
		tasks.Tests++
	}
	if failed && gates.Failures+tasks.Failures == 0 {
		gates.Cases = append(gates.Cases, junitCase{Name: "verdict", Classname: JUnitGatesClass, Time: "0",
			Failure: &junitMessage{Message: fmt.Sprintf("verdict %s (exit 1)", r.Ruling), Type: "verdict"}})
		gates.Tests++
		gates.Failures++
	}

	doc := junitSuites{Name: "sextant", Time: "0", Suites: []junitSuite{gates, tasks}}
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
	}
	return doc, nil
}
