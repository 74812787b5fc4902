package report

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// The common JUnit schema as CI systems read it (Jenkins junit-10.xsd,
// GitLab, GitHub test reporters), written independently of junit.go.
type xTestsuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    *int         `xml:"tests,attr"`
	Failures *int         `xml:"failures,attr"`
	Errors   *int         `xml:"errors,attr"`
	Skipped  *int         `xml:"skipped,attr"` // must be absent: the Jenkins xunit schema rejects it
	Time     *float64     `xml:"time,attr"`
	Suites   []xTestsuite `xml:"testsuite"`
}

type xTestsuite struct {
	Name       string        `xml:"name,attr"`
	Tests      *int          `xml:"tests,attr"`
	Failures   *int          `xml:"failures,attr"`
	Errors     *int          `xml:"errors,attr"`
	Skipped    *int          `xml:"skipped,attr"`
	Time       *float64      `xml:"time,attr"`
	Timestamp  string        `xml:"timestamp,attr"`
	Properties *xProperties  `xml:"properties"`
	Cases      []xTestcase   `xml:"testcase"`
	Inner      []xml.Name    `xml:"testsuite"`
	Any        []xAnyElement `xml:",any"`
}

type xProperties struct {
	Property []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"property"`
}

type xTestcase struct {
	Name      string     `xml:"name,attr"`
	Classname string     `xml:"classname,attr"`
	Time      *float64   `xml:"time,attr"`
	Skipped   *xMessage  `xml:"skipped"`
	Failure   []xMessage `xml:"failure"`
	Error     []xMessage `xml:"error"`
	SystemOut string     `xml:"system-out"`
}

type xMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type xAnyElement struct {
	XMLName xml.Name
}

func parseJUnit(t *testing.T, r *Report) xTestsuites {
	t.Helper()
	out := render(t, WriteJUnit, r)
	if !strings.HasPrefix(string(out), `<?xml version="1.0" encoding="UTF-8"?>`+"\n<testsuites ") {
		t.Fatalf("bad start:\n%.200s", out)
	}
	var doc xTestsuites
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("invalid XML: %v\n%s", err, out)
	}
	return doc
}

// checkCounts verifies the schema's required attributes and that each
// suite's counts match its test cases, and the root's the sum of suites.
func checkCounts(t *testing.T, doc xTestsuites) {
	t.Helper()
	required := func(what string, ps ...any) {
		for _, p := range ps {
			switch v := p.(type) {
			case *int:
				if v == nil {
					t.Fatalf("%s: a count attribute is missing", what)
				}
			case *float64:
				if v == nil {
					t.Fatalf("%s: time is missing", what)
				}
			}
		}
	}
	required("testsuites", doc.Tests, doc.Failures, doc.Errors, doc.Time)
	if doc.Skipped != nil {
		t.Fatal("testsuites has a skipped attribute: the Jenkins xunit schema rejects it")
	}
	var tests, failures, errs, skipped int
	for _, s := range doc.Suites {
		required(s.Name, s.Tests, s.Failures, s.Errors, s.Skipped, s.Time)
		if s.Name == "" {
			t.Fatal("testsuite without a name")
		}
		if len(s.Inner) > 0 {
			t.Fatalf("%s: nested test suites", s.Name)
		}
		if s.Timestamp != "" {
			t.Fatalf("%s: timestamp %q is run-to-run noise", s.Name, s.Timestamp)
		}
		if s.Properties != nil && len(s.Properties.Property) == 0 {
			t.Fatalf("%s: empty <properties> is invalid", s.Name)
		}
		for _, a := range s.Any {
			if n := a.XMLName.Local; n != "properties" && n != "testcase" && n != "system-out" && n != "system-err" {
				t.Fatalf("%s: unexpected element <%s>", s.Name, n)
			}
		}
		var f, e, sk int
		for _, c := range s.Cases {
			if c.Name == "" || c.Classname == "" || c.Time == nil {
				t.Fatalf("%s: test case without name, classname or time: %+v", s.Name, c)
			}
			f += len(c.Failure)
			e += len(c.Error)
			if c.Skipped != nil {
				sk++
			}
		}
		if *s.Tests != len(s.Cases) || *s.Failures != f || *s.Errors != e || *s.Skipped != sk {
			t.Fatalf("%s: counts tests=%d failures=%d errors=%d skipped=%d, cases say %d/%d/%d/%d",
				s.Name, *s.Tests, *s.Failures, *s.Errors, *s.Skipped, len(s.Cases), f, e, sk)
		}
		tests, failures, errs, skipped = tests+*s.Tests, failures+*s.Failures, errs+*s.Errors, skipped+*s.Skipped
	}
	_ = skipped
	if *doc.Tests != tests || *doc.Failures != failures || *doc.Errors != errs {
		t.Fatalf("testsuites counts %d/%d/%d, suites sum to %d/%d/%d",
			*doc.Tests, *doc.Failures, *doc.Errors, tests, failures, errs)
	}
}

func TestJUnitStructure(t *testing.T) {
	for _, tc := range []struct {
		name                                    string
		report                                  *Report
		gates, gateFailures, gateSkipped, tasks int
	}{
		{"pass", passingReport(), 3, 0, 0, 0},
		{"fail", failingReport(), 6, 3, 1, 26 + 3}, // the fidelity case fails too
		{"empty", &Report{}, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := parseJUnit(t, tc.report)
			checkCounts(t, doc)
			if len(doc.Suites) != 2 || doc.Suites[0].Name != JUnitGatesSuite || doc.Suites[1].Name != JUnitTasksSuite {
				t.Fatalf("want suites %q and %q, got %+v", JUnitGatesSuite, JUnitTasksSuite, doc.Suites)
			}
			g, reg := doc.Suites[0], doc.Suites[1]
			if *g.Tests != tc.gates || *g.Failures != tc.gateFailures || *g.Skipped != tc.gateSkipped {
				t.Fatalf("gates suite: tests=%d failures=%d skipped=%d", *g.Tests, *g.Failures, *g.Skipped)
			}
			if *reg.Tests != tc.tasks || *reg.Failures != tc.tasks {
				t.Fatalf("tasks suite: tests=%d failures=%d", *reg.Tests, *reg.Failures)
			}
			for i, gate := range tc.report.Gates {
				if g.Cases[i].Name != gate.Name {
					t.Fatalf("gate case %d is %q, want %q", i, g.Cases[i].Name, gate.Name)
				}
			}
		})
	}
}

func TestJUnitGateCases(t *testing.T) {
	doc := parseJUnit(t, failingReport())
	cases := map[string]xTestcase{}
	for _, c := range doc.Suites[0].Cases {
		cases[c.Name] = c
	}

	constraints := cases["constraints"]
	if len(constraints.Failure) != 1 {
		t.Fatalf("constraints: want one failure, got %+v", constraints)
	}
	f := constraints.Failure[0]
	if f.Message != "3 hard-constraint violations (want 0): never_promise_refund | t-012, t-077, t-150" {
		t.Errorf("failure message %q", f.Message)
	}
	if want := "3 hard-constraint violations (want 0): never_promise_refund | t-012, t-077, t-150\nconstraint <no_pii> broken by t-150 & t-077"; f.Text != want {
		t.Errorf("failure text %q, want %q", f.Text, want)
	}

	review := cases["human-review"]
	if review.Skipped == nil || len(review.Failure) != 0 {
		t.Fatalf("human-review: want skipped, got %+v", review)
	}
	if review.Skipped.Message != "needs review: playbook changes need a person: 2 ADD, 1 REMOVE" {
		t.Errorf("skipped message %q", review.Skipped.Message)
	}
	if pass := cases["delta-bound"]; pass.Skipped != nil || len(pass.Failure)+len(pass.Error) != 0 {
		t.Errorf("delta-bound: want a plain pass, got %+v", pass)
	}

	task := doc.Suites[1].Cases[0]
	if task.Name != "t-003" || len(task.Failure) != 1 || task.Failure[0].Text != "success: pass -> fail\nviolations: 0 -> 1" {
		t.Errorf("first regressed task: %+v", task)
	}

	props := map[string]string{}
	for _, p := range doc.Suites[0].Properties.Property {
		props[p.Name] = p.Value
	}
	if props["tasks"] != "200" || props["fidelity"] != "0.985" || props["ruling"] != "fail" || props["exit_code"] != "1" {
		t.Errorf("properties %v", props)
	}
}

// TestJUnitUnknownRuling: a gate that answered neither pass, review nor fail
// is an error, not a silent pass.
func TestJUnitUnknownRuling(t *testing.T) {
	doc := parseJUnit(t, &Report{Pipeline: "p", Ruling: sdk.Fail, ExitCode: 1, Gates: []GateResult{{Name: "odd", Ruling: "maybe"}, {Name: "ok", Ruling: sdk.Pass}}})
	checkCounts(t, doc)
	c := doc.Suites[0].Cases[0]
	if *doc.Suites[0].Errors != 1 || len(c.Error) != 1 || c.Error[0].Message != `gate gave no ruling (got "maybe")` {
		t.Fatalf("got %+v", c)
	}
}

// TestJUnitHostileText: control characters and markup in reasons and task
// ids still give well-formed XML.
func TestJUnitHostileText(t *testing.T) {
	r := &Report{
		Pipeline:  `a"b<c>`,
		Ruling:    sdk.Fail,
		ExitCode:  1,
		Gates:     []GateResult{{Name: "g]]>", Ruling: sdk.Fail, Reasons: []string{"bad \x00\x1b[31m byte ]]> <x/> &amp;"}}},
		Regressed: []string{"t<1>&\"'"},
	}
	doc := parseJUnit(t, r)
	checkCounts(t, doc)
	if doc.Suites[1].Cases[0].Name != "t<1>&\"'" || doc.Suites[1].Cases[0].Classname != `sextant.tasks.a"b<c>` {
		t.Fatalf("text not preserved: %+v", doc.Suites)
	}
}

// TestJUnitAgreesWithVerdict: a JUnit consumer fails the build exactly when
// sextant does. failures > 0 exactly when the exit code is 1, whatever the
// gates and tasks; a pass with regressed tasks reports them in system-out.
func TestJUnitAgreesWithVerdict(t *testing.T) {
	regressed := func(r *Report) *Report {
		r.Regressed = []string{"t-1", "t-2"}
		r.Flipped = []Flip{{Task: "t-1", Metric: "success_rate", From: "pass", To: "fail"}}
		return r
	}
	for _, tc := range []struct {
		name   string
		report *Report
	}{
		{"pass with regressed tasks", regressed(passingReport())},
		{"review with regressed tasks", regressed(&Report{Pipeline: "p", Ruling: sdk.Review, ExitCode: 3,
			Gates: []GateResult{{Name: "human-review", Ruling: sdk.Review}}})},
		{"fail", failingReport()},
		{"fail by divergence only", &Report{Pipeline: "p", Ruling: sdk.Fail, ExitCode: 1,
			Divergences: []Divergence{{Task: "t-9", Node: "a", Expected: "x", Got: "y"}}}},
		{"fail with nothing to show", &Report{Pipeline: "p", Ruling: sdk.Fail, ExitCode: 1,
			Gates: []GateResult{{Name: "g", Ruling: sdk.Pass}}}},
		{"empty pass", &Report{Pipeline: "p", Ruling: sdk.Pass}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := parseJUnit(t, tc.report)
			checkCounts(t, doc)
			if got, want := *doc.Failures > 0, tc.report.ExitCode == 1; got != want {
				t.Fatalf("failures=%d with exit code %d", *doc.Failures, tc.report.ExitCode)
			}
			if tc.report.ExitCode != 1 && *doc.Errors != 0 {
				t.Fatalf("errors=%d with exit code %d", *doc.Errors, tc.report.ExitCode)
			}
			for _, s := range doc.Suites {
				for _, c := range s.Cases {
					want := JUnitGatesClass
					if s.Name == JUnitTasksSuite {
						want = JUnitTasksClass + ".p"
						if tc.report.Pipeline == "support-triage" {
							want = JUnitTasksClass + ".support-triage"
						}
					}
					if c.Classname != want {
						t.Errorf("%s/%s: classname %q, want %q", s.Name, c.Name, c.Classname, want)
					}
				}
			}
			if len(tc.report.Regressed) > 0 && tc.report.ExitCode != 1 {
				c := doc.Suites[1].Cases[0]
				if c.Name != "t-1" || !strings.Contains(c.SystemOut, "regressed: passed under baseline") ||
					!strings.Contains(c.SystemOut, "success_rate: pass -> fail") {
					t.Errorf("regressed task under a %s: %+v", tc.report.Ruling, c)
				}
			}
		})
	}
}

// TestJUnitContradiction: a report whose gates or fidelity contradict
// its exit code is refused, not written with one side picked.
func TestJUnitContradiction(t *testing.T) {
	for _, r := range []*Report{
		{Pipeline: "p", Ruling: sdk.Pass, Gates: []GateResult{{Name: "g", Ruling: sdk.Fail}}},
		{Pipeline: "p", Ruling: sdk.Review, ExitCode: 3, Gates: []GateResult{{Name: "g", Ruling: "maybe"}}},
		{Pipeline: "p", Ruling: sdk.Pass, Divergences: []Divergence{{Task: "t"}}, SelfReplays: 1, MinFidelity: 1},
	} {
		var b strings.Builder
		if err := WriteJUnit(&b, r); err == nil || !strings.Contains(err.Error(), "but the exit code is") {
			t.Errorf("%+v: want an error naming the contradiction, got %v", r, err)
		}
	}
}

// TestJUnitSchema validates the JUnit reports against the schema the
// Jenkins xunit plugin applies (testdata/junit-jenkins.xsd, or the file
// $SEXTANT_JUNIT_XSD names) with xmllint, as a CI consumer would.
func TestJUnitSchema(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint is not installed (Debian: apt-get install -y libxml2-utils); the JUnit schema is not checked")
	}
	xsd := os.Getenv("SEXTANT_JUNIT_XSD")
	if xsd == "" {
		xsd = filepath.Join("testdata", "junit-jenkins.xsd")
	}
	dir := t.TempDir()
	valid := map[string]*Report{
		"pass":   passingReport(),
		"fail":   failingReport(),
		"empty":  {},
		"review": {Pipeline: "p", Ruling: sdk.Review, ExitCode: 3, Regressed: []string{"t-1"}, Gates: []GateResult{{Name: "human-review", Ruling: sdk.Review}}},
		"hostile": {Pipeline: `a"b<c>`, Ruling: sdk.Fail, ExitCode: 1, Regressed: []string{"t<1>&\"'"},
			Gates: []GateResult{{Name: "g]]>", Ruling: sdk.Fail, Reasons: []string{"bad \x00\x1b[31m byte ]]> <x/> &amp;"}}}},
	}
	var files []string
	for name, r := range valid {
		path := filepath.Join(dir, name+".xml")
		if err := os.WriteFile(path, render(t, WriteJUnit, r), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	out, err := exec.Command(xmllint, append([]string{"--noout", "--schema", xsd}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("xmllint: %v\n%s", err, out)
	}
	// The schema check itself can fail: the old root skipped attribute is
	// rejected.
	bad := filepath.Join(dir, "bad.xml")
	os.WriteFile(bad, []byte(`<?xml version="1.0"?><testsuites name="x" skipped="0"></testsuites>`), 0o644)
	if out, err := exec.Command(xmllint, "--noout", "--schema", xsd, bad).CombinedOutput(); err == nil {
		t.Fatalf("xmllint accepted a skipped attribute on <testsuites>:\n%s", out)
	}
}
