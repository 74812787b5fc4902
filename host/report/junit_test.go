package report

import (
	"encoding/xml"
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
	Skipped  *int         `xml:"skipped,attr"`
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
	required("testsuites", doc.Tests, doc.Failures, doc.Errors, doc.Skipped, doc.Time)
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
	if *doc.Tests != tests || *doc.Failures != failures || *doc.Errors != errs || *doc.Skipped != skipped {
		t.Fatalf("testsuites counts %d/%d/%d/%d, suites sum to %d/%d/%d/%d",
			*doc.Tests, *doc.Failures, *doc.Errors, *doc.Skipped, tests, failures, errs, skipped)
	}
}

func TestJUnitStructure(t *testing.T) {
	for _, tc := range []struct {
		name                                    string
		report                                  *Report
		gates, gateFailures, gateSkipped, tasks int
	}{
		{"pass", passingReport(), 3, 0, 0, 0},
		{"fail", failingReport(), 5, 2, 1, 26},
		{"empty", &Report{}, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := parseJUnit(t, tc.report)
			checkCounts(t, doc)
			if len(doc.Suites) != 2 || doc.Suites[0].Name != JUnitGatesSuite || doc.Suites[1].Name != JUnitRegressedSuite {
				t.Fatalf("want suites %q and %q, got %+v", JUnitGatesSuite, JUnitRegressedSuite, doc.Suites)
			}
			g, reg := doc.Suites[0], doc.Suites[1]
			if *g.Tests != tc.gates || *g.Failures != tc.gateFailures || *g.Skipped != tc.gateSkipped {
				t.Fatalf("gates suite: tests=%d failures=%d skipped=%d", *g.Tests, *g.Failures, *g.Skipped)
			}
			if *reg.Tests != tc.tasks || *reg.Failures != tc.tasks {
				t.Fatalf("regressed suite: tests=%d failures=%d", *reg.Tests, *reg.Failures)
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
	doc := parseJUnit(t, &Report{Pipeline: "p", Gates: []GateResult{{Name: "odd", Ruling: "maybe"}, {Name: "ok", Ruling: sdk.Pass}}})
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
		Gates:     []GateResult{{Name: "g]]>", Ruling: sdk.Fail, Reasons: []string{"bad \x00\x1b[31m byte ]]> <x/> &amp;"}}},
		Regressed: []string{"t<1>&\"'"},
	}
	doc := parseJUnit(t, r)
	checkCounts(t, doc)
	if doc.Suites[1].Cases[0].Name != "t<1>&\"'" || doc.Suites[0].Cases[0].Classname != `a"b<c>` {
		t.Fatalf("text not preserved: %+v", doc.Suites)
	}
}
