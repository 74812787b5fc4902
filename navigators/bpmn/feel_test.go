package bpmn

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// gatewayDoc is an exclusive gateway with one conditioned flow to "yes"
// and, when def is true, a default flow to "no".
func gatewayDoc(cond string, def bool) string {
	dflt := ""
	if def {
		dflt = ` default="fno"`
	}
	return doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="gw"/>
  <exclusiveGateway id="gw"` + dflt + `/>
  <sequenceFlow id="fyes" sourceRef="gw" targetRef="yes"><conditionExpression>` + cond + `</conditionExpression></sequenceFlow>
  <sequenceFlow id="fno" sourceRef="gw" targetRef="no"/>
  <endEvent id="yes"/>
  <endEvent id="no"/>
</process>`)
}

// route walks gatewayDoc(cond) with vars: "yes", "no", or the fault.
func route(t *testing.T, cond string, def bool, vars map[string]any, env sdk.Env) string {
	t.Helper()
	nv := New()
	r := loadString(t, nv, gatewayDoc(cond, def))
	env.Vars = vars
	d, err := nv.Start(context.Background(), &sdk.StartRequest{State: sdk.State{Routine: r.Hash, Env: env}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Fault != nil {
		return "fault: " + d.Fault.Message
	}
	for _, e := range d.Trace {
		if e.Type == sdk.Enter && (e.Node == "yes" || e.Node == "no") {
			return e.Node
		}
	}
	t.Fatalf("no end reached: %+v", d)
	return ""
}

// TestFEELConditions: flow conditions are FEEL, with FEEL's answers where
// the old expr-lang rewrite silently took the wrong path.
func TestFEELConditions(t *testing.T) {
	strategy := sdk.Env{Strategy: map[string]any{"parameters": map[string]any{"user_confirmation": 0.6}}}
	tests := []struct {
		name string
		cond string
		vars map[string]any
		env  sdk.Env
		want string
	}{
		// The three silent-wrong cases.
		{"closed range includes 5", "=x in [1..10]", map[string]any{"x": 5}, sdk.Env{}, "yes"},
		{"open range excludes 1", "=x in (1..10)", map[string]any{"x": 1}, sdk.Env{}, "no"},
		{"lists are 1-based", `=list[1] = "a"`, map[string]any{"list": []any{"a", "b"}}, sdk.Env{}, "yes"},
		{"lists are 1-based, second", `=list[1] = "b"`, map[string]any{"list": []any{"a", "b"}}, sdk.Env{}, "no"},
		// Built-ins the old rewrite rejected at run time.
		{"count", "=count(list) > 1", map[string]any{"list": []any{1, 2}}, sdk.Env{}, "yes"},
		{"duration", `=duration("P1D") = duration("PT24H")`, nil, sdk.Env{}, "yes"},
		{"modulo", "=modulo(n, 2) = 1", map[string]any{"n": 7}, sdk.Env{}, "yes"},
		{"decimal", "=decimal(1/3, 2) = 0.33", nil, sdk.Env{}, "yes"},
		{"decimal arithmetic", "=0.1 + 0.2 = 0.3", nil, sdk.Env{}, "yes"},
		// Plain conditions (no "=") are FEEL too.
		{"plain", "amount > 100", map[string]any{"amount": 150}, sdk.Env{}, "yes"},
		{"plain multi-word name", `Vacation Approval = "Approved"`, map[string]any{"Vacation Approval": "Approved"}, sdk.Env{}, "yes"},
		{"some", `=some r in risks satisfies r = "red"`, map[string]any{"risks": []any{"green", "red"}}, sdk.Env{}, "yes"},
		// Names: roots, process variables, nested paths.
		{"vars root", "=vars.classify.confidence >= strategy.parameters.user_confirmation",
			map[string]any{"classify": map[string]any{"confidence": 0.7}}, strategy, "yes"},
		{"input root", `=input.kind = "invoice"`, nil, sdk.Env{Input: map[string]any{"kind": "invoice"}}, "yes"},
		// Start variables are process variables (Zeebe); a process
		// variable of the same name wins.
		{"start variable", "=order.amount > 100", nil, sdk.Env{Input: map[string]any{"order": map[string]any{"amount": 150}}}, "yes"},
		{"variable over start variable", "=amount > 100", map[string]any{"amount": 1}, sdk.Env{Input: map[string]any{"amount": 150}}, "no"},
		// Camunda 7 JUEL, translated.
		{"juel ==", "${clarified == 'yes'}", map[string]any{"clarified": "yes"}, sdk.Env{}, "yes"},
		{"juel !", "${!approved}", map[string]any{"approved": false}, sdk.Env{}, "yes"},
		{"juel && gt", "${a gt 1 &amp;&amp; b}", map[string]any{"a": 2, "b": true}, sdk.Env{}, "yes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := route(t, tc.cond, true, tc.vars, tc.env); got != tc.want {
				t.Errorf("%s with %v: got %s, want %s", tc.cond, tc.vars, got, tc.want)
			}
		})
	}
}

// TestFEELConditionFaults: no flow taken and no default is a fault naming
// the gateway (Zeebe raises an incident); a condition that gives null or
// another non-boolean is a fault at the flow's position.
func TestFEELConditionFaults(t *testing.T) {
	tests := []struct {
		name, cond string
		vars       map[string]any
		want       string
	}{
		// Null is no answer (Zeebe raises an incident): a missing
		// variable or a type mismatch never takes the default flow.
		{"missing variable", "=amount > 100", nil,
			`fault: t.bpmn:7: sequenceFlow "fyes" (leaving exclusiveGateway "gw"): condition "=amount > 100" gave null, want a boolean (no variable "amount" is set)`},
		{"type mismatch", "=amount > 100", map[string]any{"amount": "lots"},
			`fault: t.bpmn:7: sequenceFlow "fyes" (leaving exclusiveGateway "gw"): condition "=amount > 100" gave null, want a boolean`},
		{"false, no default", "=amount > 100", map[string]any{"amount": 1},
			`fault: exclusiveGateway "gw": no outgoing sequence flow condition is true and there is no default flow`},
		{"not a boolean", "=amount", map[string]any{"amount": 1},
			`fault: t.bpmn:7: sequenceFlow "fyes" (leaving exclusiveGateway "gw"): condition "=amount" gave 1, want a boolean`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// fno has no condition: without a default it counts as true
			// (Camunda 7), so give it a false one.
			src := strings.Replace(gatewayDoc(tc.cond, false), `<sequenceFlow id="fno" sourceRef="gw" targetRef="no"/>`,
				`<sequenceFlow id="fno" sourceRef="gw" targetRef="no"><conditionExpression>=false</conditionExpression></sequenceFlow>`, 1)
			nv := New()
			r := loadString(t, nv, src)
			d, err := nv.Start(context.Background(), &sdk.StartRequest{State: sdk.State{Routine: r.Hash, Env: sdk.Env{Vars: tc.vars}}})
			if err != nil {
				t.Fatal(err)
			}
			got := "no fault"
			if d.Fault != nil {
				got = "fault: " + d.Fault.Message
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestFEELSyntaxErrors: a bad condition is a load problem with the
// element, the line and the FEEL column in the text as written.
func TestFEELSyntaxErrors(t *testing.T) {
	tests := []struct{ cond, want string }{
		{"=x in [1..", `t.bpmn:7: sequenceFlow "fyes": condition "=x in [1..": unexpected end of expression (column 11)`},
		{"= a +* b", `t.bpmn:7: sequenceFlow "fyes": condition "= a +* b": unexpected "*" (column 6)`},
		{"${a == }", `t.bpmn:7: sequenceFlow "fyes": condition "${a == }": unexpected end of expression (column 8)`},
		{"=", `t.bpmn:7: sequenceFlow "fyes": condition "=": empty expression`},
	}
	for _, tc := range tests {
		_, err := New().Load(context.Background(), &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(gatewayDoc(tc.cond, true))})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got  %v\n want %s", tc.cond, err, tc.want)
		}
	}
}

// TestFEELExpressionsSummary: every expression reaches Routine.Expressions
// for the host's reference check.
func TestFEELExpressionsSummary(t *testing.T) {
	src := doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="each"/>
  <task id="each"><multiInstanceLoopCharacteristics>
    <extensionElements><zeebe:loopCharacteristics inputCollection="=vars.items" inputElement="it" outputCollection="outs" outputElement="=it * 2"/></extensionElements>
    <completionCondition>=nrOfCompletedInstances >= strategy.parameters.n</completionCondition>
  </multiInstanceLoopCharacteristics></task>
  <sequenceFlow id="f1" sourceRef="each" targetRef="w"/>
  <intermediateCatchEvent id="w"><timerEventDefinition><timeDuration>=duration(vars.wait)</timeDuration></timerEventDefinition></intermediateCatchEvent>
  <sequenceFlow id="f2" sourceRef="w" targetRef="e"><conditionExpression>=vars.ok</conditionExpression></sequenceFlow>
  <endEvent id="e"/>
</process>`)
	r := loadString(t, New(), src)
	var got []string
	for _, e := range r.Expressions {
		got = append(got, e.Element+" "+e.What+" "+e.Text)
	}
	want := []string{
		`sequenceFlow "f2" condition =vars.ok`,
		`task "each" inputCollection =vars.items`,
		`task "each" outputElement =it * 2`,
		`task "each" completionCondition =nrOfCompletedInstances >= strategy.parameters.n`,
		`intermediateCatchEvent "w" timeDuration =duration(vars.wait)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expressions:\n got  %q\n want %q", got, want)
	}
}

// TestFEELMultiInstance: collections, output elements and completion
// conditions are FEEL; numbers come back as the wire carries them.
func TestFEELMultiInstance(t *testing.T) {
	src := doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="each"/>
  <task id="each"><multiInstanceLoopCharacteristics isSequential="true">
    <extensionElements><zeebe:loopCharacteristics inputCollection="=for i in 1..n return i * 1.5" inputElement="it" outputCollection="outs" outputElement="=it * 2"/></extensionElements>
  </multiInstanceLoopCharacteristics></task>
  <sequenceFlow id="f1" sourceRef="each" targetRef="e"/>
  <endEvent id="e"/>
</process>`)
	nv := New()
	r := loadString(t, nv, src)
	st, _ := walk(t, nv, r, map[string]any{"n": 3}, func([]sdk.Token) int { return 0 }, nil)
	if want := []any{3.0, 6.0, 9.0}; !reflect.DeepEqual(st.Env.Vars["outs"], want) {
		t.Errorf("outs = %#v, want %#v", st.Env.Vars["outs"], want)
	}
}
