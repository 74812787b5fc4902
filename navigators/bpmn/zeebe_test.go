package bpmn

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// ioDoc is a task with the given extension elements, then a gateway on
// riskScore.
func ioDoc(ext string) string {
	return doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="score"/>
  <serviceTask id="score"><extensionElements>` + ext + `</extensionElements></serviceTask>
  <sequenceFlow id="f1" sourceRef="score" targetRef="gw"/>
  <exclusiveGateway id="gw" default="low"/>
  <sequenceFlow id="high" sourceRef="gw" targetRef="h"><conditionExpression>=riskScore > 5</conditionExpression></sequenceFlow>
  <sequenceFlow id="low" sourceRef="gw" targetRef="l"/>
  <endEvent id="h"/>
  <endEvent id="l"/>
</process>`)
}

// TestZeebeOutputMapping: an output source is FEEL over the step's
// output: source="=s" target="riskScore" sets riskScore to the output's s,
// not to the whole output, and the gateway after it sees the new value in
// the same call. A dotted target merges into the variable it names, so
// the routine reads it (Routine.Reads): over a wire, which sends only
// what the routine reads, report keeps its entry too.
func TestZeebeOutputMapping(t *testing.T) {
	t.Run("memory", func(t *testing.T) { zeebeOutputMapping(t, New()) })
	t.Run("wire", func(t *testing.T) { zeebeOutputMapping(t, sdktest.Wire(New())) })
}

func zeebeOutputMapping(t *testing.T, nv sdk.Navigator) {
	r := loadString(t, nv, ioDoc(`<zeebe:ioMapping>
    <zeebe:output source="=s" target="riskScore"/>
    <zeebe:output source="=s * 2 + bonus" target="report.doubled"/>
    <zeebe:output source="fixed" target="report.note"/>
  </zeebe:ioMapping>`))
	st, ds := walk(t, nv, r, map[string]any{"bonus": 1, "report": map[string]any{"kept": true}}, func([]sdk.Token) int { return 0 },
		func(sdk.Token) sdk.Outcome {
			return sdk.Outcome{Status: sdk.OK, Output: map[string]any{"s": 7, "other": "x"}}
		})
	last := ds[len(ds)-1]
	if !last.Complete {
		t.Fatalf("not complete: %+v", last)
	}
	if got := st.Env.Vars["riskScore"]; got != 7.0 {
		t.Errorf("riskScore = %#v, want 7", got)
	}
	want := map[string]any{"kept": true, "doubled": 15.0, "note": "fixed"}
	if got := st.Env.Vars["report"]; !reflect.DeepEqual(got, want) {
		t.Errorf("report = %#v, want %#v", got, want)
	}
	var path []string
	for _, e := range last.Trace {
		path = append(path, string(e.Type)+":"+e.Node)
	}
	if !strings.Contains(strings.Join(path, " "), "enter:h") {
		t.Errorf("riskScore 7 > 5 should take the high flow: %v", path)
	}
}

// TestZeebeInputMappingAndHeaders: input mappings and task headers are on
// the ready token (.token.NAME, .token.headers.KEY in step templates);
// later mappings see earlier ones; output mappings see the inputs.
func TestZeebeInputMappingAndHeaders(t *testing.T) {
	nv := New()
	r := loadString(t, nv, ioDoc(`<zeebe:taskDefinition type="risk"/>
  <zeebe:taskHeaders><zeebe:header key="model" value="small"/><zeebe:header key="tone" value="dry"/></zeebe:taskHeaders>
  <zeebe:ioMapping>
    <zeebe:input source="=input.body" target="text"/>
    <zeebe:input source="=string length(text)" target="size"/>
    <zeebe:input source="static" target="cfg.mode"/>
    <zeebe:output source="=size" target="riskScore"/>
  </zeebe:ioMapping>`))
	ctx := context.Background()
	st := sdk.State{Routine: r.Hash, Env: sdk.Env{Input: map[string]any{"body": "hello world"}}}
	d, err := nv.Start(ctx, &sdk.StartRequest{State: st})
	if err != nil {
		t.Fatal(err)
	}
	st = d.Apply(st)
	var ready *sdk.Token
	for i := range st.Tokens {
		if st.Tokens[i].Status == sdk.Ready {
			ready = &st.Tokens[i]
		}
	}
	if ready == nil {
		t.Fatalf("no ready token: %+v", st.Tokens)
	}
	want := map[string]any{"text": "hello world", "size": 11.0, "cfg": map[string]any{"mode": "static"},
		"headers": map[string]any{"model": "small", "tone": "dry"}}
	if !reflect.DeepEqual(ready.Attrs, want) {
		t.Errorf("attrs %#v\nwant  %#v", ready.Attrs, want)
	}
	d, err = nv.Next(ctx, &sdk.NextRequest{State: st, Token: ready.ID, Outcome: sdk.Outcome{Status: sdk.OK}})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Set["riskScore"]; got != 11.0 {
		t.Errorf("riskScore from the input local = %#v, want 11", got)
	}
	// The summary carries the task type and the mapped names.
	for _, n := range r.Nodes {
		if n.ID == "score" {
			if n.Type != "risk" || !reflect.DeepEqual(n.Inputs, []string{"text", "size", "cfg"}) || !reflect.DeepEqual(n.Outputs, []string{"riskScore"}) {
				t.Errorf("node %+v", n)
			}
		}
	}
}

// TestZeebeEventOutputMapping: output mappings on events are applied when
// the event is left (here over a message payload).
func TestZeebeEventOutputMapping(t *testing.T) {
	nv := New()
	r := loadString(t, nv, doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="c"/>
  <intermediateCatchEvent id="c">
    <extensionElements><zeebe:ioMapping><zeebe:output source="=foo.bar" target="mapped"/></zeebe:ioMapping></extensionElements>
    <messageEventDefinition/>
  </intermediateCatchEvent>
  <sequenceFlow id="f1" sourceRef="c" targetRef="e"/>
  <endEvent id="e"/>
</process>`))
	ctx := context.Background()
	st := sdk.State{Routine: r.Hash}
	d, err := nv.Start(ctx, &sdk.StartRequest{State: st})
	if err != nil {
		t.Fatal(err)
	}
	st = d.Apply(st)
	d, err = nv.Boundary(ctx, &sdk.BoundaryRequest{State: st, Token: st.Tokens[len(st.Tokens)-1].ID, Event: "c",
		Payload: map[string]any{"foo": map[string]any{"bar": "baz"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Complete || d.Set["mapped"] != "baz" {
		t.Errorf("decision complete=%v set=%v", d.Complete, d.Set)
	}
}

// TestZeebeProblems: what the navigator does not support is a positioned
// problem, never ignored.
func TestZeebeProblems(t *testing.T) {
	task := func(ext string) string {
		return doc(`<process id="p">
  <serviceTask id="t"><extensionElements>` + ext + `</extensionElements></serviceTask>
</process>`)
	}
	tests := []struct{ name, src, want string }{
		{"called decision", task(`<zeebe:calledDecision decisionId="d" resultVariable="r"/>`),
			`t.bpmn:4: serviceTask "t": zeebe:calledDecision is only allowed on business rule tasks`},
		{"script without result variable", doc(`<process id="p">
  <scriptTask id="t"><extensionElements><zeebe:script expression="=1"/></extensionElements></scriptTask>
</process>`), `t.bpmn:4: scriptTask "t": zeebe:script: missing resultVariable (the variable the expression's value is written to)`},
		{"script on a service task", doc(`<process id="p">
  <serviceTask id="t"><extensionElements><zeebe:script expression="=1" resultVariable="r"/></extensionElements></serviceTask>
</process>`), `t.bpmn:4: serviceTask "t": zeebe:script is only allowed on script tasks`},
		{"script syntax", doc(`<process id="p">
  <scriptTask id="t"><extensionElements><zeebe:script expression="=1 +" resultVariable="r"/></extensionElements></scriptTask>
</process>`), `t.bpmn:4: scriptTask "t": zeebe:script expression "=1 +": unexpected end of expression (column 5)`},
		{"execution listeners", doc(`<process id="p"><extensionElements>
  <zeebe:executionListeners/></extensionElements>
  <task id="t"/>
</process>`), `t.bpmn:4: process "p": zeebe:executionListeners is not supported`},
		{"flow extension", doc(`<process id="p"><task id="a"/><task id="b"/>
  <sequenceFlow id="f" sourceRef="a" targetRef="b"><extensionElements><zeebe:properties/><zeebe:whatever/></extensionElements></sequenceFlow>
</process>`), `t.bpmn:4: sequenceFlow "f": zeebe:whatever is not supported`},
		{"bad input source", task(`<zeebe:ioMapping><zeebe:input source="=a +" target="x"/></zeebe:ioMapping>`),
			`t.bpmn:4: serviceTask "t": zeebe:input source "=a +": unexpected end of expression (column 5)`},
		{"bad target", task(`<zeebe:ioMapping><zeebe:output source="=a" target="x..y"/><zeebe:output source="=a"/></zeebe:ioMapping>`),
			"t.bpmn:4: serviceTask \"t\": zeebe:output target \"x..y\": not a variable name or a dotted path\n" +
				`t.bpmn:4: serviceTask "t": zeebe:output: missing target`},
		{"reserved input target", task(`<zeebe:ioMapping><zeebe:input source="=a" target="flow"/></zeebe:ioMapping>`),
			`t.bpmn:4: serviceTask "t": zeebe:input target "flow": the name is reserved for the navigator's token attributes`},
		{"input on an event", doc(`<process id="p">
  <intermediateThrowEvent id="t"><extensionElements><zeebe:ioMapping><zeebe:input source="=a" target="x"/></zeebe:ioMapping></extensionElements></intermediateThrowEvent>
</process>`), `t.bpmn:4: intermediateThrowEvent "t": zeebe:input mappings are supported on tasks and sub-processes only`},
		{"dynamic task type", task(`<zeebe:taskDefinition type="=kind"/>`),
			`t.bpmn:4: serviceTask "t": zeebe:taskDefinition type "=kind": expressions are not supported (bind steps by a fixed type)`},
		{"task definition on an event", doc(`<process id="p">
  <endEvent id="t"><extensionElements><zeebe:taskDefinition type="mail"/></extensionElements><messageEventDefinition/></endEvent>
</process>`), `t.bpmn:4: endEvent "t": zeebe:taskDefinition is only supported on tasks (model a job at a message event as a send task)`},
		{"call activity variable propagation", doc(`<process id="p">
  <callActivity id="c"><extensionElements><zeebe:calledElement processId="q" propagateAllChildVariables="false"/></extensionElements></callActivity>
  <callActivity id="d"><extensionElements><zeebe:calledElement processId="q" propagateAllParentVariables="false" bindingType="versionTag" versionTag="v1"/></extensionElements></callActivity>
</process>
<process id="q"><task id="t"/></process>`), "t.bpmn:4: callActivity \"c\": zeebe:calledElement propagateAllChildVariables=\"false\" is not supported (the caller sees every variable the called process writes)\n" +
			"t.bpmn:5: callActivity \"d\": zeebe:calledElement propagateAllParentVariables=\"false\" is not supported (the called process sees every variable of the caller)\n" +
			`t.bpmn:5: callActivity "d": zeebe:calledElement bindingType "versionTag" is not supported (the file's own process is the only version)`},
		{"multi-instance element without its collection", doc(`<process id="p">
  <task id="t"><multiInstanceLoopCharacteristics><loopCardinality>2</loopCardinality><extensionElements>
    <zeebe:loopCharacteristics inputElement="item" outputElement="=item * 2"/>
  </extensionElements></multiInstanceLoopCharacteristics></task>
</process>`), "t.bpmn:5: task \"t\": zeebe:loopCharacteristics inputElement \"item\" without an inputCollection: nothing sets it (name the collection)\n" +
			`t.bpmn:5: task "t": zeebe:loopCharacteristics outputElement "=item * 2" without an outputCollection: its values go nowhere (name the collection)`},
		{"bad correlation key", doc(`<message id="m" name="m"><extensionElements><zeebe:subscription correlationKey="=order.(id"/></extensionElements></message>
<process id="p"><task id="t"/></process>`), `t.bpmn:3: message "m": zeebe:subscription correlationKey "=order.(id": unexpected "(" after ".", want a name (column 8)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New().Load(context.Background(), &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(tc.src)})
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestZeebeAccepted: Tasklist metadata loads.
func TestZeebeAccepted(t *testing.T) {
	loadString(t, New(), doc(`<message id="m" name="m"><extensionElements><zeebe:subscription correlationKey="=order.id"/></extensionElements></message>
<process id="p"><userTask id="t"><extensionElements>
  <zeebe:assignmentDefinition assignee="demo"/><zeebe:formDefinition formKey="f"/><zeebe:userTask/>
  <zeebe:taskSchedule dueDate="=now()"/><zeebe:properties><zeebe:property name="a" value="b"/></zeebe:properties>
</extensionElements></userTask></process>`))
}

// TestTimerValues: timer definitions are ISO 8601 (checked with FEEL's
// temporal parsers) or FEEL expressions, at load, with positions.
func TestTimerValues(t *testing.T) {
	timer := func(kind, v string) string {
		return doc(`<process id="p"><intermediateCatchEvent id="w"><timerEventDefinition><` + kind + `>` + v + `</` + kind + `></timerEventDefinition></intermediateCatchEvent></process>`)
	}
	good := []struct{ kind, v string }{
		{"timeDuration", "PT10M"}, {"timeDuration", "P1DT2H"}, {"timeDuration", "P2W"}, {"timeDuration", `=duration("PT1H")`},
		{"timeDate", "2026-01-02T15:04:05Z"}, {"timeDate", "2026-01-02T15:04:05+02:00"}, {"timeDate", "2019-10-02T08:09:40+02:00[Europe/Berlin]"},
		{"timeDate", `=date and time("2026-01-02T00:00:00Z")`},
		{"timeCycle", "R3/PT10M"}, {"timeCycle", "R/PT1H"}, {"timeCycle", "R2/2026-01-02T00:00:00Z/P1D"}, {"timeCycle", "R/PT1H/2026-01-02T00:00:00Z"},
		{"timeCycle", "=cycle(duration(\"PT1H\"))"},
		{"timeCycle", "0 0 9-17 * * MON-FRI"}, {"timeCycle", "0 */15 * ? * *"}, {"timeCycle", "@daily"}, {"timeCycle", "0 0 0 29 2 MON"},
	}
	for _, g := range good {
		if _, err := New().Load(context.Background(), &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(timer(g.kind, g.v))}); err != nil {
			t.Errorf("%s %s: %v", g.kind, g.v, err)
		}
	}
	bad := []struct{ kind, v, want string }{
		{"timeDuration", "PT", `not an ISO 8601 duration (like PT30S)`},
		{"timeDuration", "10 minutes", `not an ISO 8601 duration (like PT30S)`},
		{"timeDate", "2026-13-02T15:04:05Z", `not an ISO 8601 date-time (like 2026-01-02T15:04:05Z)`},
		{"timeCycle", "R3/10M", `not an ISO 8601 repetition (like R3/PT10M) or a cron expression (like 0 0 9-17 * * MON-FRI)`},
		{"timeCycle", "Rx/PT1M", `not an ISO 8601 repetition (like R3/PT10M) or a cron expression (like 0 0 9-17 * * MON-FRI)`},
		{"timeCycle", "0 9-17 * * MON-FRI", `a cron cycle has six fields (second minute hour day-of-month month day-of-week, like 0 0 9-17 * * MON-FRI), got 5`},
		{"timeCycle", "0 0 25 * * *", `cron hour "25": "25" is not a value from 0 to 23`},
		{"timeCycle", "0 0 9 L * *", `cron day of month "L": the special characters L, W and # are not supported`},
		{"timeCycle", "0 0 9 * * MON#2", `cron day of week "MON#2": the special characters L, W and # are not supported`},
		{"timeCycle", "0 0 0 30 2 *", `the cron cycle matches no date`},
		{"timeDuration", "=duration(", `unexpected end of expression (column 11)`},
	}
	for _, b := range bad {
		_, err := New().Load(context.Background(), &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(timer(b.kind, b.v))})
		want := `t.bpmn:3: intermediateCatchEvent "w": ` + b.kind + ` "` + b.v + `": ` + b.want
		if err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	}
}

// TestTimerExpressionValue: a FEEL timer gives the host its ISO text.
func TestTimerExpressionValue(t *testing.T) {
	nv := New()
	r := loadString(t, nv, doc(`<process id="p"><startEvent id="s"/><sequenceFlow id="f" sourceRef="s" targetRef="w"/>
<intermediateCatchEvent id="w"><timerEventDefinition><timeDuration>=duration("PT1H") * n</timeDuration></timerEventDefinition></intermediateCatchEvent></process>`))
	d, err := nv.Start(context.Background(), &sdk.StartRequest{State: sdk.State{Routine: r.Hash, Env: sdk.Env{Vars: map[string]any{"n": 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	var timers any
	for _, tk := range d.Add {
		if tk.Node == "w" {
			timers = tk.Attrs[attrTimers]
		}
	}
	if want := map[string]string{"w": "timeDuration PT3H"}; !reflect.DeepEqual(timers, want) {
		t.Errorf("timers %#v, want %#v", timers, want)
	}
}

// TestReads: a BPMN routine reads every name its FEEL expressions look up
// (conditions, mapping sources, ...) and the variables dotted mapping
// targets merge into; vars as a whole reads them all.
func TestReads(t *testing.T) {
	r := loadString(t, New(), ioDoc(`<zeebe:ioMapping><zeebe:output source="=s * 2 + bonus" target="report.doubled"/></zeebe:ioMapping>`))
	if want := []string{"bonus", "report", "riskScore", "s"}; r.Reads == nil || !reflect.DeepEqual(r.Reads.Vars, want) {
		t.Errorf("Reads %+v, want %q", r.Reads, want)
	}
	r = loadString(t, New(), ioDoc(`<zeebe:ioMapping><zeebe:output source="=get value(vars, &quot;k&quot;)" target="x"/></zeebe:ioMapping>`))
	if r.Reads != nil {
		t.Errorf("a routine that reads vars as a whole: Reads %q, want nil (every variable)", r.Reads.Vars)
	}
}

// TestCamunda7Problems: Camunda 7 extensions that would move data or run
// code (input/output parameters, call activity variables, listeners, a
// DMN reference) are problems naming what to write instead: the navigator
// runs none of them, and a diagram that counts on them would take another
// path silently. What only configures the replaced implementation or a
// tasklist (camunda:class, camunda:field, camunda:asyncBefore,
// camunda:formKey, camunda:assignee) still loads.
func TestCamunda7Problems(t *testing.T) {
	c7 := func(body string) string {
		return strings.Replace(doc(body), `id="d">`, `xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">`, 1)
	}
	tests := []struct{ name, src, want string }{
		{"input and output parameters", c7(`<process id="p">
  <serviceTask id="t"><extensionElements><camunda:inputOutput>
    <camunda:inputParameter name="x">${a * 2}</camunda:inputParameter>
  </camunda:inputOutput></extensionElements></serviceTask>
</process>`), `t.bpmn:4: serviceTask "t": camunda:inputOutput is not run (write the mappings as zeebe:ioMapping)`},
		{"call activity variables", c7(`<process id="p">
  <callActivity id="c" calledElement="q"><extensionElements><camunda:in source="a" target="b"/>
  <camunda:out variables="all"/></extensionElements></callActivity>
</process>
<process id="q"><task id="t"/></process>`), "t.bpmn:4: callActivity \"c\": camunda:in is not run (the called process sees every variable, as with Zeebe's default)\n" +
			`t.bpmn:5: callActivity "c": camunda:out is not run (the called process sees every variable, as with Zeebe's default)`},
		{"listeners", c7(`<process id="p"><extensionElements><camunda:executionListener event="start" class="a.B"/></extensionElements>
  <userTask id="t"><extensionElements><camunda:taskListener event="create" expression="${x}"/></extensionElements></userTask>
  <sequenceFlow id="f" sourceRef="t" targetRef="t"><extensionElements><camunda:executionListener event="take" class="a.B"/></extensionElements></sequenceFlow>
</process>`), "t.bpmn:3: process \"p\": camunda:executionListener is not run (listeners run no code here)\n" +
			"t.bpmn:4: userTask \"t\": camunda:taskListener is not run (listeners run no code here)\n" +
			`t.bpmn:5: sequenceFlow "f": camunda:executionListener is not run (listeners run no code here)`},
		{"two input collections", c7(`<process id="p">
  <task id="t"><multiInstanceLoopCharacteristics camunda:collection="${items}" camunda:elementVariable="i"><extensionElements>
    <zeebe:loopCharacteristics inputCollection="=others" inputElement="o"/>
  </extensionElements></multiInstanceLoopCharacteristics></task>
</process>`), `t.bpmn:5: task "t": multi-instance has camunda:collection and zeebe:loopCharacteristics inputCollection: give one`},
		{"decision reference", c7(`<process id="p">
  <businessRuleTask id="t" camunda:decisionRef="risk" camunda:resultVariable="r"/>
</process>`), `t.bpmn:4: businessRuleTask "t": camunda:decisionRef is not run (call the decision with zeebe:calledDecision)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New().Load(context.Background(), &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(tc.src)})
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
	loadString(t, New(), c7(`<process id="p" camunda:historyTimeToLive="30">
  <serviceTask id="t" camunda:class="a.B" camunda:asyncBefore="true"><extensionElements><camunda:field name="f"><camunda:string>x</camunda:string></camunda:field></extensionElements></serviceTask>
  <userTask id="u" camunda:formKey="k" camunda:assignee="demo"/>
</process>`))
}
