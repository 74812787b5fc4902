package dmn_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/navigators/dmn"
	"github.com/sextant-dev/sextant/navigators/feel"
)

const header = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" id="m" name="m" namespace="m">
`

// tableModel is one decision "D" over input "x" (a number) with the given
// hit policy and rules ("entry -> output").
func tableModel(t *testing.T, hit, agg, outputValues string, rules ...string) *dmn.Model {
	t.Helper()
	var b strings.Builder
	b.WriteString(header)
	b.WriteString(`<inputData id="x" name="x"><variable name="x" typeRef="number"/></inputData>
<decision id="D" name="D"><informationRequirement><requiredInput href="#x"/></informationRequirement>`)
	fmt.Fprintf(&b, `<decisionTable hitPolicy=%q aggregation=%q><input><inputExpression><text>x</text></inputExpression></input><output name="o">`, hit, agg)
	if outputValues != "" {
		fmt.Fprintf(&b, `<outputValues><text>%s</text></outputValues>`, outputValues)
	}
	b.WriteString(`</output>`)
	for i, r := range rules {
		in, out, _ := strings.Cut(r, " -> ")
		fmt.Fprintf(&b, `<rule id="r%d"><inputEntry><text>%s</text></inputEntry><outputEntry><text>%s</text></outputEntry></rule>`, i+1, xmlEsc(in), xmlEsc(out))
	}
	b.WriteString(`</decisionTable></decision></definitions>`)
	m, err := dmn.Parse("t.dmn", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func xmlEsc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func decide(t *testing.T, m *dmn.Model, x any) (string, error) {
	t.Helper()
	v, err := m.Evaluate(context.Background(), "D", map[string]any{"x": x})
	if err != nil {
		return "", err
	}
	return feel.Format(v), nil
}

func TestHitPolicies(t *testing.T) {
	rules := []string{`< 10 -> "low"`, `< 20 -> "mid"`, `>= 5 -> "high"`, `> 100 -> "low"`}
	for _, tc := range []struct {
		hit, agg, values string
		x                int
		want             string
		err              error
	}{
		{"FIRST", "", "", 7, `"low"`, nil},
		{"FIRST", "", "", 50, `"high"`, nil},
		{"RULE ORDER", "", "", 7, `["low", "mid", "high"]`, nil},
		{"RULE ORDER", "", "", -5000, `["low", "mid"]`, nil},
		{"COLLECT", "", "", 200, `["high", "low"]`, nil},
		{"COLLECT", "COUNT", "", 7, `3`, nil},
		{"COLLECT", "MIN", "", 7, `"high"`, nil},
		{"COLLECT", "MAX", "", 7, `"mid"`, nil},
		{"PRIORITY", "", `"high","mid","low"`, 7, `"high"`, nil},
		{"PRIORITY", "", `"low","mid","high"`, 7, `"low"`, nil},
		{"OUTPUT ORDER", "", `"high","mid","low"`, 7, `["high", "mid", "low"]`, nil},
		{"OUTPUT ORDER", "", `"mid","low","high"`, 200, `["low", "high"]`, nil},
		{"ANY", "", "", 15, "", dmn.ErrHitPolicy},
		{"ANY", "", "", 200, "", dmn.ErrHitPolicy},
	} {
		name := fmt.Sprintf("%s_%s_%d", tc.hit, tc.agg, tc.x)
		t.Run(name, func(t *testing.T) {
			m := tableModel(t, tc.hit, tc.agg, tc.values, rules...)
			got, err := decide(t, m, tc.x)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %s, %v; want %v", got, err, tc.err)
				}
				var ee *dmn.EvalError
				if !errors.As(err, &ee) || ee.Line == 0 || !strings.HasPrefix(err.Error(), "t.dmn:") {
					t.Errorf("error %q is not positioned", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestUnique(t *testing.T) {
	m := tableModel(t, "UNIQUE", "", `"low","mid","high"`, `< 10 -> "low"`, `[10..20] -> "mid"`, `>= 20 -> "high"`, `> 100 -> "huge"`)
	for x, want := range map[int]string{5: `"low"`, 15: `"mid"`, 20: "", 50: `"high"`, 500: ""} {
		got, err := decide(t, m, x)
		switch {
		case x == 20 && !errors.Is(err, dmn.ErrHitPolicy):
			t.Errorf("x=20: got %s, %v; want ErrHitPolicy", got, err)
		case x == 500 && !errors.Is(err, dmn.ErrHitPolicy) && !errors.Is(err, dmn.ErrValue):
			t.Errorf("x=500: got %s, %v; want an error", got, err)
		case want != "" && (err != nil || got != want):
			t.Errorf("x=%d: got %s, %v; want %s", x, got, err, want)
		}
	}
	if _, err := decide(t, m, 20); err == nil || !strings.Contains(err.Error(), "rules 2 (r2) and 3 (r3) both match") {
		t.Errorf("violation message: %v", err)
	}
	out := tableModel(t, "UNIQUE", "", `"low","mid"`, `< 10 -> "low"`, `>= 10 -> "high"`)
	if got, err := decide(t, out, 50); !errors.Is(err, dmn.ErrValue) {
		t.Errorf("output outside its values: got %s, %v; want ErrValue", got, err)
	}
}

func TestCollectSum(t *testing.T) {
	m := tableModel(t, "COLLECT", "SUM", "", `< 10 -> 1.5`, `< 20 -> 2`, `-  -> 10`)
	for x, want := range map[int]string{5: "13.5", 15: "12", 50: "10"} {
		if got, err := decide(t, m, x); err != nil || got != want {
			t.Errorf("x=%d: got %s, %v; want %s", x, got, err, want)
		}
	}
	none := tableModel(t, "COLLECT", "SUM", "", `< 10 -> 1`)
	if got, err := decide(t, none, 50); err != nil || got != "null" {
		t.Errorf("no match: got %s, %v; want null", got, err)
	}
	count := tableModel(t, "COLLECT", "COUNT", "", `< 10 -> 1`)
	if got, err := decide(t, count, 50); err != nil || got != "0" {
		t.Errorf("no match: got %s, %v; want 0", got, err)
	}
}

const graph = header + `
<itemDefinition name="tLevel"><typeRef>string</typeRef><allowedValues><text>"gold","silver"</text></allowedValues></itemDefinition>
<itemDefinition name="tCustomer">
  <itemComponent name="name"><typeRef>string</typeRef></itemComponent>
  <itemComponent name="since"><typeRef>date</typeRef></itemComponent>
</itemDefinition>
<inputData id="lvl" name="Level"><variable name="Level" typeRef="tLevel"/></inputData>
<inputData id="cust" name="Customer"><variable name="Customer" typeRef="tCustomer"/></inputData>
<decision id="base" name="Base Discount">
  <variable name="Base Discount" typeRef="number"/>
  <informationRequirement><requiredInput href="#lvl"/></informationRequirement>
  <literalExpression><text>if Level = "gold" then 0.1 else 0.05</text></literalExpression>
</decision>
<businessKnowledgeModel id="loyal" name="Loyalty Bonus">
  <encapsulatedLogic>
    <formalParameter name="years" typeRef="number"/>
    <literalExpression><text>min(years, 5) / 100</text></literalExpression>
  </encapsulatedLogic>
</businessKnowledgeModel>
<decision id="total" name="Total Discount">
  <informationRequirement><requiredDecision href="#base"/></informationRequirement>
  <informationRequirement><requiredInput href="#cust"/></informationRequirement>
  <knowledgeRequirement><requiredKnowledge href="#loyal"/></knowledgeRequirement>
  <context>
    <contextEntry><variable name="years"/><literalExpression><text>years and months duration(Customer.since, date("2024-06-01")).years</text></literalExpression></contextEntry>
    <contextEntry><literalExpression><text>Base Discount + Loyalty Bonus(years)</text></literalExpression></contextEntry>
  </context>
</decision>
<businessKnowledgeModel id="loop" name="Forever">
  <knowledgeRequirement><requiredKnowledge href="#loop"/></knowledgeRequirement>
  <encapsulatedLogic><formalParameter name="n"/><literalExpression><text>Forever(n + 1)</text></literalExpression></encapsulatedLogic>
</businessKnowledgeModel>
<decision id="runaway" name="Runaway">
  <knowledgeRequirement><requiredKnowledge href="#loop"/></knowledgeRequirement>
  <literalExpression><text>Forever(1)</text></literalExpression>
</decision>
</definitions>`

func TestDecisionGraph(t *testing.T) {
	m, err := dmn.Parse("g.dmn", []byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := map[string]any{"Level": "gold", "Customer": map[string]any{"name": "Ann", "since": "2021-03-15"}}
	v, err := m.Evaluate(ctx, "Total Discount", in)
	if err != nil || feel.Format(v) != "0.13" {
		t.Fatalf("Total Discount = %s, %v; want 0.13", feel.Format(v), err)
	}
	// by id
	if v, err := m.Evaluate(ctx, "base", in); err != nil || feel.Format(v) != "0.1" {
		t.Fatalf("base = %s, %v", feel.Format(v), err)
	}
	// allowed values and structure are checked on inputs: errors, not nulls
	for _, bad := range []map[string]any{
		{"Level": "bronze", "Customer": in["Customer"]},
		{"Level": 3, "Customer": in["Customer"]},
		{"Level": "gold", "Customer": map[string]any{"name": "Ann", "since": "long ago"}},
		{"Level": "gold", "Customer": "Ann"},
	} {
		if v, err := m.Evaluate(ctx, "Total Discount", bad); !errors.Is(err, dmn.ErrType) {
			t.Errorf("inputs %v: got %s, %v; want ErrType", bad, feel.Format(v), err)
		}
	}
	if _, err := m.Evaluate(ctx, "Nope", in); !errors.Is(err, dmn.ErrNoDecision) {
		t.Errorf("missing decision: %v", err)
	}
	// unbounded recursion through a BKM stops at the call depth limit
	if _, err := m.Evaluate(ctx, "Runaway", nil); !errors.Is(err, feel.ErrLimit) {
		t.Errorf("runaway recursion: %v; want feel.ErrLimit", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Evaluate(cctx, "Total Discount", in); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	deep := header + strings.Repeat("<extensionElements>", 200) + strings.Repeat("</extensionElements>", 200) + "</definitions>"
	for _, tc := range []struct{ name, src, want string }{
		{"not XML", header + `<decision id="d" name="d">` + "\n</definitions>", `^x.dmn:4: not well-formed XML: element <decision> closed by </definitions>$`},
		{"doctype", "<?xml version=\"1.0\"?>\n<!DOCTYPE d [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>\n<definitions/>", `^x.dmn:2: document type declarations are not allowed$`},
		{"entity", header + "<decision id=\"d\" name=\"&e;\"/></definitions>", `^x.dmn:3: not well-formed XML: invalid character entity &e;$`},
		{"deep", deep, `^x.dmn:\d+: elements nested deeper than 128$`},
		{"not DMN", `<definitions xmlns="urn:other"/>`, `^x.dmn:1: definitions: not a DMN model`},
		{"href", header + "<decision id=\"d\" name=\"d\">\n<informationRequirement><requiredInput href=\"#nope\"/></informationRequirement></decision></definitions>", `^x.dmn:4: requiredInput: reference "#nope": no element with id "nope"$`},
		{"cycle", header + `<decision id="a" name="a"><informationRequirement><requiredDecision href="#b"/></informationRequirement></decision>
<decision id="b" name="b"><informationRequirement><requiredDecision href="#a"/></informationRequirement></decision></definitions>`, `requires itself`},
		{"type", header + "<inputData id=\"i\" name=\"i\">\n<variable name=\"i\" typeRef=\"tMissing\"/></inputData></definitions>", `^x.dmn:4: variable "i": unknown type "tMissing"$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dmn.Parse("x.dmn", []byte(tc.src))
			if err == nil {
				t.Fatal("parsed")
			}
			if !matches(tc.want, err.Error()) {
				t.Errorf("error %q, want match for %q", err, tc.want)
			}
		})
	}
	big := make([]byte, dmn.MaxSize+1)
	if _, err := dmn.Parse("big.dmn", big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized model: %v", err)
	}
}

func TestSyntaxErrorFailsOnlyItsDecision(t *testing.T) {
	src := header + `<decision id="bad" name="Bad">
<literalExpression><text>1 +* 2</text></literalExpression></decision>
<decision id="ok" name="Ok"><literalExpression><text>1 + 2</text></literalExpression></decision>
<decision id="hp" name="Hp">
<decisionTable hitPolicy="SOMETIMES"><output/></decisionTable></decision></definitions>`
	m, err := dmn.Parse("s.dmn", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Problems()) != 2 {
		t.Errorf("problems: %v", m.Problems())
	}
	if v, err := m.Evaluate(context.Background(), "Ok", nil); err != nil || feel.Format(v) != "3" {
		t.Errorf("Ok = %v, %v", v, err)
	}
	_, err = m.Evaluate(context.Background(), "Bad", nil)
	var pe *dmn.Error
	if !errors.As(err, &pe) || pe.Line != 4 || !strings.Contains(err.Error(), `1:4: unexpected "*"`) {
		t.Errorf("Bad: %v; want a positioned *dmn.Error", err)
	}
	_, err = m.Evaluate(context.Background(), "Hp", nil)
	if !errors.As(err, &pe) || err.Error() != `s.dmn:7: decisionTable: unknown hit policy "SOMETIMES"` {
		t.Errorf("Hp: %v; want a positioned *dmn.Error", err)
	}
}

func matches(pattern, s string) bool {
	if strings.HasPrefix(pattern, "^") {
		re := regexpMust(pattern)
		return re.MatchString(s)
	}
	return strings.Contains(s, pattern)
}

func regexpMust(p string) *regexp.Regexp { return regexp.MustCompile(p) }

// TestEvaluateVars: a process engine's call sees every variable by name,
// behind the decision's requirements; Evaluate keeps to the requirements.
func TestEvaluateVars(t *testing.T) {
	m, err := dmn.Parse("v.dmn", []byte(header+`<inputData id="x" name="x"><variable name="x" typeRef="number"/></inputData>
<decision id="D" name="Doubled"><informationRequirement><requiredInput href="#x"/></informationRequirement>
<literalExpression><text>x + (if score = null then 0 else score)</text></literalExpression></decision>
</definitions>`))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{"x": 1, "score": 10}
	for _, c := range []struct {
		name string
		eval func() (any, error)
		want string
	}{
		{"Evaluate", func() (any, error) { return m.Evaluate(context.Background(), "D", vars) }, "1"},
		{"EvaluateVars", func() (any, error) { return m.EvaluateVars(context.Background(), "Doubled", vars, time.Time{}) }, "11"},
		{"EvaluateVars shadowed", func() (any, error) {
			return m.EvaluateVars(context.Background(), "D", map[string]any{"x": "one", "score": 1}, time.Time{})
		}, "error"},
	} {
		v, err := c.eval()
		got := feel.Format(v)
		if err != nil {
			got = "error"
			if !errors.Is(err, dmn.ErrType) {
				t.Errorf("%s: %v, want ErrType", c.name, err)
			}
		}
		if got != c.want {
			t.Errorf("%s = %s, want %s", c.name, got, c.want)
		}
	}
	if !m.Has("D") || !m.Has("Doubled") || m.Has("x") || m.Has("E") {
		t.Errorf("Has: D %v, Doubled %v, x %v, E %v; want true, true, false, false", m.Has("D"), m.Has("Doubled"), m.Has("x"), m.Has("E"))
	}
}
