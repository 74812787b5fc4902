package bpmn

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// path renders the trace of every decision as enter/exit lines.
func tracePath(ds []*sdk.Decision) string {
	var out []string
	for _, d := range ds {
		for _, e := range d.Trace {
			out = append(out, string(e.Type)+":"+e.Node)
		}
	}
	return strings.Join(out, " ")
}

// outputs answers every ready token with the output of its node.
func outputs(by map[string]map[string]any) func(sdk.Token) sdk.Outcome {
	return func(tk sdk.Token) sdk.Outcome {
		out := by[tk.Node]
		if f, ok := by[tk.Node+"#fn"]; ok {
			out = f["fn"].(func(sdk.Token) map[string]any)(tk)
		}
		return sdk.Outcome{Status: sdk.OK, Output: out}
	}
}

// TestZeebeVariables: Zeebe's variable semantics, in memory and over a
// wire client (which sends only what the routine reads).
func TestZeebeVariables(t *testing.T) {
	for _, tr := range []struct {
		name string
		nv   func() sdk.Navigator
	}{{"memory", func() sdk.Navigator { return New() }}, {"wire", func() sdk.Navigator { return sdktest.Wire(New()) }}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Run("result merges", func(t *testing.T) { resultMerges(t, tr.nv()) })
			t.Run("mappings decide", func(t *testing.T) { mappingsDecide(t, tr.nv()) })
			t.Run("start variables", func(t *testing.T) { startVariables(t, tr.nv()) })
			t.Run("sub-process locals", func(t *testing.T) { subProcessLocals(t, tr.nv()) })
			t.Run("multi-instance locals", func(t *testing.T) { multiInstanceLocals(t, tr.nv()) })
			t.Run("script task", func(t *testing.T) { scriptTask(t, tr.nv()) })
		})
	}
}

// resultMerges: a step's result without output mappings is merged into
// the process (a Zeebe job's variables): the gateway reads riskScore by
// name. The task's input mapping target is local to the task, and the
// result (merged from the task's flow scope) does not stop at it.
func resultMerges(t *testing.T, nv sdk.Navigator) {
	r := loadString(t, nv, ioDoc(`<zeebe:ioMapping><zeebe:input source="=1" target="riskScore"/></zeebe:ioMapping>`))
	st, ds := walk(t, nv, r, nil, func([]sdk.Token) int { return 0 },
		outputs(map[string]map[string]any{"score": {"riskScore": 6, "note": "ok"}}))
	if !strings.Contains(tracePath(ds), "enter:h") {
		t.Errorf("riskScore 6 > 5 should take the high flow: %s", tracePath(ds))
	}
	if got := fmt.Sprint(st.Env.Vars); got != "map[note:ok riskScore:6]" {
		t.Errorf("vars %v, want riskScore 6 and note ok merged", st.Env.Vars)
	}
	// A result that is not an object (the host's {"value": x}) writes no
	// variable by name.
	_, ds = walk(t, nv, r, map[string]any{"riskScore": 9}, func([]sdk.Token) int { return 0 },
		outputs(map[string]map[string]any{"score": {"value": "text"}}))
	if d := ds[len(ds)-1]; d.Set != nil || !strings.Contains(tracePath(ds), "enter:h") {
		t.Errorf("a wrapped result set %v (path %s), want nothing and the high flow", d.Set, tracePath(ds))
	}
}

// mappingsDecide: with output mappings, only their targets are written.
func mappingsDecide(t *testing.T, nv sdk.Navigator) {
	r := loadString(t, nv, ioDoc(`<zeebe:ioMapping><zeebe:output source="=s" target="riskScore"/></zeebe:ioMapping>`))
	st, _ := walk(t, nv, r, nil, func([]sdk.Token) int { return 0 },
		outputs(map[string]map[string]any{"score": {"s": 7, "other": "x"}}))
	if want := map[string]any{"riskScore": 7.0}; !reflect.DeepEqual(st.Env.Vars, want) {
		t.Errorf("vars %v, want %v", st.Env.Vars, want)
	}
}

// startVariables: the start input's variables are process variables:
// =order.amount reads the input's order; a process variable of the same
// name, once written, wins.
func startVariables(t *testing.T, nv sdk.Navigator) {
	src := strings.Replace(ioDoc(""), "=riskScore > 5", "=order.amount > 100", 1)
	r := loadString(t, nv, src)
	in := map[string]any{"order": map[string]any{"amount": 150}}
	_, ds := walkEnv(t, nv, r, sdk.Env{Input: in}, func([]sdk.Token) int { return 0 }, nil)
	if !strings.Contains(tracePath(ds), "enter:h") {
		t.Errorf("order.amount 150 > 100 should take the high flow: %s", tracePath(ds))
	}
	_, ds = walkEnv(t, nv, r, sdk.Env{Input: in}, func([]sdk.Token) int { return 0 },
		outputs(map[string]map[string]any{"score": {"order": map[string]any{"amount": 5}}}))
	if !strings.Contains(tracePath(ds), "enter:l") {
		t.Errorf("the step's order (amount 5) should win over the input's: %s", tracePath(ds))
	}
}

// subProcessLocals: a sub-process's input mapping creates a local
// variable; a step inside writes it there (propagation stops at the
// nearest scope holding the name), the gateway inside sees it, the
// process never does.
func subProcessLocals(t *testing.T, nv sdk.Navigator) {
	r := loadString(t, nv, doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="sub"/>
  <subProcess id="sub">
    <extensionElements><zeebe:ioMapping><zeebe:input source="=0" target="riskScore"/></zeebe:ioMapping></extensionElements>
    <startEvent id="ss"/>
    <sequenceFlow id="g0" sourceRef="ss" targetRef="score"/>
    <serviceTask id="score"/>
    <sequenceFlow id="g1" sourceRef="score" targetRef="gw"/>
    <exclusiveGateway id="gw" default="low"/>
    <sequenceFlow id="high" sourceRef="gw" targetRef="h"><conditionExpression>=riskScore > 5</conditionExpression></sequenceFlow>
    <sequenceFlow id="low" sourceRef="gw" targetRef="l"/>
    <endEvent id="h"/>
    <endEvent id="l"/>
  </subProcess>
  <sequenceFlow id="f1" sourceRef="sub" targetRef="e"/>
  <endEvent id="e"/>
</process>`))
	st, ds := walk(t, nv, r, nil, func([]sdk.Token) int { return 0 },
		outputs(map[string]map[string]any{"score": {"riskScore": 7, "seen": true}}))
	if !strings.Contains(tracePath(ds), "enter:h") || !ds[len(ds)-1].Complete {
		t.Errorf("the sub-process's riskScore 7 should take the high flow: %s", tracePath(ds))
	}
	if want := map[string]any{"seen": true}; !reflect.DeepEqual(st.Env.Vars, want) {
		t.Errorf("process vars %v, want %v (riskScore stays in the sub-process)", st.Env.Vars, want)
	}
}

// multiInstanceLocals: each instance holds its input element, loopCounter
// and the output element's variable (=result): a step's result writes
// result there, the output collection gathers them, and the process sees
// neither item nor result, but does see the result's other variables.
func multiInstanceLocals(t *testing.T, nv sdk.Navigator) {
	r := loadString(t, nv, doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="each"/>
  <serviceTask id="each">
    <multiInstanceLoopCharacteristics><extensionElements>
      <zeebe:loopCharacteristics inputCollection="=items" inputElement="item" outputCollection="results" outputElement="=result"/>
    </extensionElements></multiInstanceLoopCharacteristics>
  </serviceTask>
  <sequenceFlow id="f1" sourceRef="each" targetRef="e"/>
  <endEvent id="e"/>
</process>`))
	double := func(tk sdk.Token) map[string]any {
		n, _ := toInt(tk.Attrs["item"])
		return map[string]any{"result": n * 2, "seen": true}
	}
	st, ds := walk(t, nv, r, map[string]any{"items": []any{1, 2, 3}}, func([]sdk.Token) int { return 0 },
		outputs(map[string]map[string]any{"each#fn": {"fn": double}}))
	if !ds[len(ds)-1].Complete {
		t.Fatalf("not complete: %s", tracePath(ds))
	}
	if got, want := fmt.Sprint(st.Env.Vars), "map[items:[1 2 3] results:[2 4 6] seen:true]"; got != want {
		t.Errorf("vars %s, want %s", got, want)
	}
}

// scriptTask: a zeebe:script task runs in the navigator (no step, no
// ready token): its value is written to its result variable, which the
// gateway after it reads.
func scriptTask(t *testing.T, nv sdk.Navigator) {
	src := strings.Replace(ioDoc(""), `<serviceTask id="score"><extensionElements></extensionElements></serviceTask>`,
		`<scriptTask id="score"><extensionElements><zeebe:script expression="=sum(for i in items return i.points)" resultVariable="riskScore"/></extensionElements></scriptTask>`, 1)
	r := loadString(t, nv, src)
	for _, n := range r.Nodes {
		if n.ID == "score" && (n.Step || !slices.Equal(n.Outputs, []string{"riskScore"})) {
			t.Errorf("script task summary %+v, want no step and output riskScore", n)
		}
	}
	items := []any{map[string]any{"points": 4}, map[string]any{"points": 3}}
	st, ds := walk(t, nv, r, map[string]any{"items": items}, func([]sdk.Token) int { return 0 }, func(tk sdk.Token) sdk.Outcome {
		t.Errorf("token %s at %s was handed to the host", tk.ID, tk.Node)
		return sdk.Outcome{Status: sdk.OK}
	})
	if len(ds) != 1 || !ds[0].Complete || !strings.Contains(tracePath(ds), "enter:h") {
		t.Errorf("the script's 7 > 5 should take the high flow in one call: %s", tracePath(ds))
	}
	if got := fmt.Sprint(st.Env.Vars["riskScore"]); got != "7" {
		t.Errorf("riskScore = %s, want 7", got)
	}
}
