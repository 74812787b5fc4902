package bpmn_test

import (
	"context"
	"fmt"

	"github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/sdk"
)

const triage = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
  <process id="triage" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="classify"/>
    <serviceTask id="classify"/>
    <sequenceFlow id="f2" sourceRef="classify" targetRef="confident"/>
    <exclusiveGateway id="confident" default="ask"/>
    <sequenceFlow id="act" sourceRef="confident" targetRef="done">
      <conditionExpression>=vars.classify.confidence &gt;= strategy.threshold</conditionExpression>
    </sequenceFlow>
    <sequenceFlow id="ask" sourceRef="confident" targetRef="confirm"/>
    <userTask id="confirm"/>
    <sequenceFlow id="f3" sourceRef="confirm" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>`

// A host loads a routine once, starts an instance and reports each finished
// step, applying every Decision to the state it keeps.
func Example() {
	ctx := context.Background()
	nav := bpmn.New()
	r, err := nav.Load(ctx, &sdk.LoadRequest{Name: "triage.bpmn", Routine: []byte(triage)})
	if err != nil {
		fmt.Println(err)
		return
	}
	st := sdk.State{Routine: r.Hash, Env: sdk.Env{Strategy: map[string]any{"threshold": 0.8}}}
	d, _ := nav.Start(ctx, &sdk.StartRequest{State: st})
	for {
		for _, e := range d.Trace {
			fmt.Println(e.Type, e.Node)
		}
		st = d.Apply(st)
		if d.Complete || d.Fault != nil {
			break
		}
		var ready sdk.Token
		for _, t := range st.Tokens {
			if t.Status == sdk.Ready {
				ready = t
			}
		}
		if ready.Node == "classify" { // the step's output, as the host records it
			st.Env.Vars = map[string]any{"classify": map[string]any{"confidence": 0.5}}
		}
		d, _ = nav.Next(ctx, &sdk.NextRequest{State: st, Token: ready.ID, Outcome: sdk.Outcome{Status: sdk.OK}})
	}
	fmt.Println("complete:", d.Complete)
	// Output:
	// exit start
	// enter classify
	// exit classify
	// enter confident
	// exit confident
	// enter confirm
	// exit confirm
	// enter done
	// exit done
	// complete: true
}

// Load reports every problem of a routine at once, each with its line and
// the element it concerns.
func ExampleNavigator_Load() {
	_, err := bpmn.New().Load(context.Background(), &sdk.LoadRequest{Name: "bad.bpmn", Routine: []byte(`<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL">
  <process id="p">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="gw1"/>
    <exclusiveGateway id="gw1"/>
    <sequenceFlow id="f2" sourceRef="start" targetRef="nowhere"/>
  </process>
</definitions>`)})
	fmt.Println(err)
	// Output:
	// bad.bpmn:5: exclusiveGateway "gw1": no outgoing sequence flow
	// bad.bpmn:6: sequenceFlow "f2": targetRef "nowhere" names no flow node
}
