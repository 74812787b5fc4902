package bpmn

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// riskDMN is a small decision model as Camunda Modeler writes one: the
// table's input expressions read process variables (riskScore,
// order.amount) that the model declares no input data for; "overlap" has
// two rules that match a score of 8 under a UNIQUE hit policy; "typed"
// requires an input data declared a number.
const riskDMN = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" id="risk" name="Risk" namespace="http://example.com/risk">
  <decision id="risk-level" name="Risk level">
    <decisionTable id="t1" hitPolicy="UNIQUE">
      <input id="i1" label="Score"><inputExpression id="e1" typeRef="number"><text>riskScore</text></inputExpression></input>
      <input id="i2" label="Amount"><inputExpression id="e2" typeRef="number"><text>order.amount</text></inputExpression></input>
      <output id="o1" name="level" typeRef="string"/>
      <rule id="high"><inputEntry><text>&gt;= 5</text></inputEntry><inputEntry><text>-</text></inputEntry><outputEntry><text>"high"</text></outputEntry></rule>
      <rule id="medium"><inputEntry><text>&lt; 5</text></inputEntry><inputEntry><text>&gt;= 500</text></inputEntry><outputEntry><text>"medium"</text></outputEntry></rule>
      <rule id="low"><inputEntry><text>&lt; 5</text></inputEntry><inputEntry><text>&lt; 500</text></inputEntry><outputEntry><text>"low"</text></outputEntry></rule>
    </decisionTable>
  </decision>
  <decision id="overlap" name="Overlap">
    <decisionTable id="t2" hitPolicy="UNIQUE">
      <input id="i3"><inputExpression id="e3" typeRef="number"><text>riskScore</text></inputExpression></input>
      <output id="o2" name="level" typeRef="string"/>
      <rule id="r1"><inputEntry><text>&gt;= 5</text></inputEntry><outputEntry><text>"a"</text></outputEntry></rule>
      <rule id="r2"><inputEntry><text>&gt;= 3</text></inputEntry><outputEntry><text>"b"</text></outputEntry></rule>
    </decisionTable>
  </decision>
  <inputData id="amount" name="amount"><variable name="amount" typeRef="number"/></inputData>
  <decision id="typed" name="Typed">
    <informationRequirement><requiredInput href="#amount"/></informationRequirement>
    <literalExpression><text>amount * 2</text></literalExpression>
  </decision>
</definitions>`

// ruleDoc is a routine whose business rule task calls decision id and a
// gateway reads its result.
func ruleDoc(id, ext string) string {
	return doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="rate"/>
  <businessRuleTask id="rate"><extensionElements><zeebe:calledDecision decisionId="` + id + `" resultVariable="level"/>` + ext + `</extensionElements></businessRuleTask>
  <sequenceFlow id="f1" sourceRef="rate" targetRef="gw"/>
  <exclusiveGateway id="gw" default="other"/>
  <sequenceFlow id="toHigh" sourceRef="gw" targetRef="h"><conditionExpression>=level = "high"</conditionExpression></sequenceFlow>
  <sequenceFlow id="other" sourceRef="gw" targetRef="o"/>
  <endEvent id="h"/>
  <endEvent id="o"/>
</process>`)
}

func loadRules(t *testing.T, nv sdk.Navigator, src string, files ...sdk.File) *sdk.Routine {
	t.Helper()
	r, err := nv.Load(context.Background(), &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(src), Decisions: files})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var riskFile = sdk.File{Name: "rules.dmn", Data: []byte(riskDMN)}

// TestBusinessRuleTask: the navigator evaluates the called decision with
// the variables visible at the task (a step's result, a start variable,
// neither declared as input data) and writes its result variable, which
// the gateway reads in the same call; no step runs. In memory and over a
// wire, which carries the decision files with the load.
func TestBusinessRuleTask(t *testing.T) {
	for _, tr := range []struct {
		name string
		nv   func() sdk.Navigator
	}{{"memory", func() sdk.Navigator { return New() }}, {"wire", func() sdk.Navigator { return sdktest.Wire(New()) }}} {
		t.Run(tr.name, func(t *testing.T) {
			nv := tr.nv()
			r := loadRules(t, nv, ruleDoc("risk-level", ""), riskFile)
			for _, n := range r.Nodes {
				if n.ID == "rate" && (n.Step || !slices.Equal(n.Outputs, []string{"level"})) {
					t.Errorf("business rule task summary %+v, want no step and output level", n)
				}
			}
			noStep := func(tk sdk.Token) sdk.Outcome {
				t.Errorf("token %s at %s was handed to the host", tk.ID, tk.Node)
				return sdk.Outcome{Status: sdk.OK}
			}
			for _, c := range []struct {
				score, amount float64
				level, end    string
			}{{8, 10, "high", "h"}, {2, 900, "medium", "o"}, {2, 10, "low", "o"}} {
				env := sdk.Env{Input: map[string]any{"order": map[string]any{"amount": c.amount}}, Vars: map[string]any{"riskScore": c.score}}
				st, ds := walkEnv(t, nv, r, env, func([]sdk.Token) int { return 0 }, noStep)
				if len(ds) != 1 || !ds[0].Complete || !strings.Contains(tracePath(ds), "enter:"+c.end) {
					t.Errorf("score %v amount %v: %s (fault %v), want one call ending at %s", c.score, c.amount, tracePath(ds), ds[0].Fault, c.end)
				}
				if got := fmt.Sprint(st.Env.Vars["level"]); got != c.level {
					t.Errorf("score %v amount %v: level = %s, want %s", c.score, c.amount, got, c.level)
				}
			}
		})
	}
}

// TestBusinessRuleTaskMapped: with output mappings the result variable is
// the task's own, and only the mappings' targets reach the process, as in
// Zeebe.
func TestBusinessRuleTaskMapped(t *testing.T) {
	nv := New()
	r := loadRules(t, nv, strings.Replace(ruleDoc("risk-level", `<zeebe:ioMapping><zeebe:output source="=upper case(level)" target="grade"/></zeebe:ioMapping>`),
		`=level = "high"`, `=grade = "HIGH"`, 1), riskFile)
	st, ds := walkEnv(t, nv, r, sdk.Env{Vars: map[string]any{"riskScore": 9}}, func([]sdk.Token) int { return 0 }, nil)
	if !ds[len(ds)-1].Complete || !strings.Contains(tracePath(ds), "enter:h") {
		t.Fatalf("%s (fault %v), want the high end", tracePath(ds), ds[len(ds)-1].Fault)
	}
	if got := fmt.Sprint(st.Env.Vars); got != "map[grade:HIGH riskScore:9]" {
		t.Errorf("vars %s, want grade HIGH and no level", got)
	}
}

// TestBusinessRuleTaskFaults: an evaluation error stops the run with a
// Fault positioned at the task, naming the rules or the input.
func TestBusinessRuleTaskFaults(t *testing.T) {
	for _, c := range []struct {
		id   string
		vars map[string]any
		want string
	}{
		{"overlap", map[string]any{"riskScore": 8}, `t.bpmn:6: businessRuleTask "rate": zeebe:calledDecision "overlap": rules.dmn:`},
		{"overlap", map[string]any{"riskScore": 8}, "hit policy violated"},
		{"typed", map[string]any{"amount": "lots"}, `inputData "amount": value does not conform to its type: "lots" is not a number`},
	} {
		nv := New()
		r := loadRules(t, nv, ruleDoc(c.id, ""), riskFile)
		_, ds := walk(t, nv, r, c.vars, func([]sdk.Token) int { return 0 }, nil)
		f := ds[len(ds)-1].Fault
		if f == nil || f.Node != "rate" || !strings.Contains(f.Message, c.want) {
			t.Errorf("%s %v: fault %+v, want one at rate containing %q", c.id, c.vars, f, c.want)
		}
	}
}

// TestBusinessRuleTaskProblems: what cannot be called is a load problem
// with the task's line.
func TestBusinessRuleTaskProblems(t *testing.T) {
	broken := sdk.File{Name: "broken.dmn", Data: []byte(`<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" id="x" name="x" namespace="n">
<decision id="d" name="d"><literalExpression><text>1</text></literalExpression></decision>
<decision id="d2" name="d"/>
<unknownThing/></definitions>`)}
	for _, c := range []struct {
		name, src string
		files     []sdk.File
		want      string
	}{
		{"unknown id", ruleDoc("nope", ""), []sdk.File{riskFile},
			`t.bpmn:6: businessRuleTask "rate": zeebe:calledDecision "nope": no decision with that id in rules.dmn`},
		{"no files", ruleDoc("risk-level", ""), nil,
			`t.bpmn:6: businessRuleTask "rate": zeebe:calledDecision "risk-level": no DMN files were given (a pipeline's [routine] decisions, or --decisions)`},
		{"in two files", ruleDoc("risk-level", ""), []sdk.File{riskFile, {Name: "copy.dmn", Data: riskFile.Data}},
			`t.bpmn:6: businessRuleTask "rate": zeebe:calledDecision "risk-level": the decision is in both rules.dmn and copy.dmn`},
		{"expression id", ruleDoc("=kind", ""), []sdk.File{riskFile},
			`t.bpmn:6: businessRuleTask "rate": zeebe:calledDecision decisionId "=kind": expressions are not supported (name the decision's id)`},
		{"and a job", ruleDoc("risk-level", `<zeebe:taskDefinition type="rate"/>`), []sdk.File{riskFile},
			`t.bpmn:6: businessRuleTask "rate": zeebe:calledDecision and zeebe:taskDefinition: a business rule task either calls a decision or runs a job, not both`},
		{"on a service task", strings.ReplaceAll(ruleDoc("risk-level", ""), "businessRuleTask", "serviceTask"), []sdk.File{riskFile},
			`t.bpmn:6: serviceTask "rate": zeebe:calledDecision is only allowed on business rule tasks`},
		{"version tag", strings.Replace(ruleDoc("risk-level", ""), `resultVariable="level"`, `resultVariable="level" bindingType="versionTag"`, 1), []sdk.File{riskFile},
			`t.bpmn:6: businessRuleTask "rate": zeebe:calledDecision bindingType "versionTag" is not supported (the pipeline's decision files are the only version)`},
		{"bad model", ruleDoc("risk-level", ""), []sdk.File{broken}, `broken.dmn:3: decision "d": a decision or decision service named "d" is declared twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New().Load(context.Background(), &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(c.src), Decisions: c.files})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got  %v\nwant %s", err, c.want)
			}
		})
	}
}

// TestDecisionsChangeTheHash: the same diagram with other decision files
// is another routine, so a changed model is not taken for the cached one;
// the same files are parsed once.
func TestDecisionsChangeTheHash(t *testing.T) {
	nv := New()
	src := ruleDoc("risk-level", "")
	a := loadRules(t, nv, src, riskFile)
	other := sdk.File{Name: "rules.dmn", Data: []byte(strings.Replace(riskDMN, `<text>"high"</text>`, `<text>"severe"</text>`, 1))}
	b := loadRules(t, nv, src, other)
	if a.Hash == b.Hash {
		t.Fatalf("both loads have hash %s", a.Hash)
	}
	loadRules(t, nv, src, riskFile)
	if len(nv.models) != 2 {
		t.Errorf("%d models cached, want 2 (one per content)", len(nv.models))
	}
	plain := loadString(t, nv, doc(`<process id="p"><task id="t"/></process>`))
	if want := routineHash([]byte(doc(`<process id="p"><task id="t"/></process>`)), nil); plain.Hash != want || len(want) != 64 {
		t.Errorf("a routine without decisions hashes to %s, want its sha256 %s", plain.Hash, want)
	}
	st, ds := walk(t, nv, b, map[string]any{"riskScore": 7}, func([]sdk.Token) int { return 0 }, nil)
	if got := fmt.Sprint(st.Env.Vars["level"]); got != "severe" || !ds[0].Complete {
		t.Errorf("level %s with the second model, want severe", got)
	}
}

// TestExpressionNames: the summary names what each expression reads that
// the routine binds nowhere, and the functions FEEL lacks.
func TestExpressionNames(t *testing.T) {
	r := loadString(t, New(), doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="each"/>
  <serviceTask id="each">
    <extensionElements><zeebe:ioMapping><zeebe:input source="=limit" target="cap"/></zeebe:ioMapping></extensionElements>
    <multiInstanceLoopCharacteristics><extensionElements><zeebe:loopCharacteristics inputCollection="=items" inputElement="it"/></extensionElements>
      <completionCondition>=nrOfCompletedInstances &gt; cap and it.ok</completionCondition>
    </multiInstanceLoopCharacteristics>
  </serviceTask>
  <sequenceFlow id="f1" sourceRef="each" targetRef="gw"/>
  <exclusiveGateway id="gw" default="f3"/>
  <sequenceFlow id="f2" sourceRef="gw" targetRef="e"><conditionExpression>=riskScroe &gt; input.x and sum(for v in vals return v) &gt; strng length(name)</conditionExpression></sequenceFlow>
  <sequenceFlow id="f3" sourceRef="gw" targetRef="e"/>
  <endEvent id="e"/>
</process>`))
	got := map[string]string{}
	for _, e := range r.Expressions {
		got[e.What] = fmt.Sprint(e.Names, e.Unknown)
	}
	want := map[string]string{
		"zeebe:input cap":     "[limit] []",
		"inputCollection":     "[items] []",
		"completionCondition": "[] []",
		"condition":           "[name riskScroe vals] [strng length]",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: names and unknown functions %s, want %s", k, got[k], w)
		}
	}
}

// BenchmarkBusinessRuleTask starts an instance whose one call runs a
// business rule task (a 3-rule UNIQUE table over a variable and a start
// variable) and the gateway after it, to the end.
func BenchmarkBusinessRuleTask(b *testing.B) {
	ctx := context.Background()
	nv := New()
	r, err := nv.Load(ctx, &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(ruleDoc("risk-level", "")), Decisions: []sdk.File{riskFile}})
	if err != nil {
		b.Fatal(err)
	}
	env := sdk.Env{Input: map[string]any{"order": map[string]any{"amount": 900.0}}, Vars: map[string]any{"riskScore": 2.0}}
	b.ReportAllocs()
	for b.Loop() {
		d, err := nv.Start(ctx, &sdk.StartRequest{State: sdk.State{Routine: r.Hash, Env: env}})
		if err != nil || !d.Complete || d.Set["level"] != "medium" {
			b.Fatalf("%+v, %v", d, err)
		}
	}
}

// BenchmarkLoadDecisions loads a routine with one decision file, again:
// the file is parsed once, the routine each time.
func BenchmarkLoadDecisions(b *testing.B) {
	ctx := context.Background()
	nv := New()
	req := &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(ruleDoc("risk-level", "")), Decisions: []sdk.File{riskFile}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := nv.Load(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
