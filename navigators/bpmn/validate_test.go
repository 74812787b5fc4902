package bpmn

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// doc wraps process elements in a definitions document; line 3 is the
// first line of body.
func doc(body string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
` + body + `
</definitions>`
}

func TestLoadProblems(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // every problem, one per line
	}{
		{"not xml", `<definitions`, `bad.bpmn:1: invalid XML: unexpected EOF`},
		{"wrong root", `<?xml version="1.0"?>
<diagram/>`, `bad.bpmn:2: not a BPMN 2.0 document: root element is <diagram>, want <definitions> in namespace http://www.omg.org/spec/BPMN/20100524/MODEL`},
		{"no process", doc(`<message id="m"/>`), `bad.bpmn:2: no <process> in the definitions`},
		{"gateway without outgoing flow", doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f" sourceRef="s" targetRef="gw1"/>
  <exclusiveGateway id="gw1"/>
</process>`), `bad.bpmn:6: exclusiveGateway "gw1": no outgoing sequence flow`},
		{"token quantities and instantiating elements", doc(`<message id="m" name="m"/><message id="m2" name="m2"/>
<process id="p">
  <task id="t" startQuantity="2" completionQuantity="1"/>
  <task id="u" completionQuantity="3"/>
  <eventBasedGateway id="g" eventGatewayType="Parallel" instantiate="true"/>
  <sequenceFlow id="f2" sourceRef="g" targetRef="a"/>
  <intermediateCatchEvent id="a"><messageEventDefinition messageRef="m"/></intermediateCatchEvent>
  <sequenceFlow id="f3" sourceRef="g" targetRef="b"/>
  <intermediateCatchEvent id="b"><messageEventDefinition messageRef="m2"/></intermediateCatchEvent>
  <receiveTask id="r" messageRef="m" instantiate="true"/>
</process>`), "bad.bpmn:5: task \"t\": startQuantity=\"2\" is not supported (an activity starts for each token that arrives, and sends one token down each outgoing flow)\n" +
			"bad.bpmn:6: task \"u\": completionQuantity=\"3\" is not supported (an activity starts for each token that arrives, and sends one token down each outgoing flow)\n" +
			"bad.bpmn:7: eventBasedGateway \"g\": instantiate=\"true\" is not supported (start the process with a message or timer start event)\n" +
			"bad.bpmn:7: eventBasedGateway \"g\": eventGatewayType=\"Parallel\" is not supported (the first event to occur wins)\n" +
			`bad.bpmn:12: receiveTask "r": instantiate="true" is not supported (start the process with a message or timer start event)`},
		{"two timer values, two instance counts", doc(`<process id="p">
  <intermediateCatchEvent id="c"><timerEventDefinition>
    <timeDuration>PT1M</timeDuration><timeCycle>R2/PT1M</timeCycle>
  </timerEventDefinition></intermediateCatchEvent>
  <task id="t"><multiInstanceLoopCharacteristics>
    <loopCardinality>2</loopCardinality>
    <extensionElements><zeebe:loopCharacteristics inputCollection="=[1,2,3]" inputElement="x"/></extensionElements>
  </multiInstanceLoopCharacteristics></task>
</process>`), "bad.bpmn:5: intermediateCatchEvent \"c\": timerEventDefinition has timeDuration and timeCycle: give one\n" +
			`bad.bpmn:8: task "t": multi-instance has a loopCardinality and an input collection: give one (the collection's length is the count)`},
		{"missing and duplicate ids", doc(`<process id="p">
  <task/>
  <task id="p"/>
</process>`), "bad.bpmn:4: task: missing id\nbad.bpmn:5: task \"p\": duplicate id (first used on line 3)"},
		{"flow ends", doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f" sourceRef="s" targetRef="nowhere"/>
  <sequenceFlow id="g" targetRef="s"/>
</process>`), "bad.bpmn:5: sequenceFlow \"f\": targetRef \"nowhere\" names no flow node\nbad.bpmn:6: sequenceFlow \"g\": missing sourceRef"},
		{"flow across scopes", doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f" sourceRef="s" targetRef="inner"/>
  <subProcess id="sub"><task id="inner"/></subProcess>
</process>`), `bad.bpmn:5: sequenceFlow "f": targetRef "inner" is in another scope`},
		{"condition syntax", doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f" sourceRef="s" targetRef="e"><conditionExpression>=amount &gt;</conditionExpression></sequenceFlow>
  <endEvent id="e"/>
</process>`), `bad.bpmn:5: sequenceFlow "f": condition "=amount >": unexpected end of expression (column 10)`},
		{"condition language", doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f" sourceRef="s" targetRef="e">
    <conditionExpression language="http://www.w3.org/1999/XPath">true()</conditionExpression>
  </sequenceFlow>
  <endEvent id="e"/>
</process>`), `bad.bpmn:6: sequenceFlow "f": condition language "http://www.w3.org/1999/XPath" is not supported (write a FEEL expression, optionally prefixed with =)`},
		{"default flow", doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f" sourceRef="s" targetRef="gw"/>
  <exclusiveGateway id="gw" default="f"/>
  <sequenceFlow id="a" sourceRef="gw" targetRef="e"/>
  <endEvent id="e"/>
  <exclusiveGateway id="gw2" default="c"/>
  <sequenceFlow id="c" sourceRef="gw2" targetRef="e"><conditionExpression>true</conditionExpression></sequenceFlow>
</process>`), "bad.bpmn:6: exclusiveGateway \"gw\": default flow \"f\" is not an outgoing sequence flow of this element\nbad.bpmn:10: sequenceFlow \"c\": the default flow of exclusiveGateway \"gw2\" cannot have a condition"},
		{"boundary", doc(`<process id="p">
  <startEvent id="s"/>
  <boundaryEvent id="b1" attachedToRef="s"><timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition></boundaryEvent>
  <boundaryEvent id="b2" attachedToRef="ghost"><timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition></boundaryEvent>
  <boundaryEvent id="b3"><timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition></boundaryEvent>
  <task id="t"/>
  <boundaryEvent id="b4" attachedToRef="t" cancelActivity="false"><errorEventDefinition/></boundaryEvent>
</process>`), "bad.bpmn:5: boundaryEvent \"b1\": attached to startEvent \"s\", which is not an activity\n" +
			"bad.bpmn:6: boundaryEvent \"b2\": attachedToRef \"ghost\" names no element\n" +
			"bad.bpmn:7: boundaryEvent \"b3\": missing attachedToRef\n" +
			"bad.bpmn:9: boundaryEvent \"b4\": error boundary events always interrupt (remove cancelActivity=\"false\")"},
		{"timer without value", doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f1" sourceRef="s" targetRef="c1"/>
  <intermediateCatchEvent id="c1"><timerEventDefinition/></intermediateCatchEvent>
  <sequenceFlow id="f2" sourceRef="c1" targetRef="c2"/>
  <intermediateCatchEvent id="c2"><timerEventDefinition>
    <timeDuration>  </timeDuration>
  </timerEventDefinition></intermediateCatchEvent>
  <sequenceFlow id="f3" sourceRef="c2" targetRef="e"/>
  <endEvent id="e"/>
</process>`), "bad.bpmn:6: intermediateCatchEvent \"c1\": timerEventDefinition has no timeDate, timeDuration or timeCycle\n" +
			"bad.bpmn:9: intermediateCatchEvent \"c2\": timeDuration has no value"},
		{"link without catch", doc(`<process id="p">
  <intermediateThrowEvent id="go"><linkEventDefinition name="A"/></intermediateThrowEvent>
  <intermediateCatchEvent id="land"><linkEventDefinition name="B"/></intermediateCatchEvent>
</process>`), `bad.bpmn:4: intermediateThrowEvent "go": no link catch event named "A" in the same scope`},
		{"unsupported elements", doc(`<process id="p">
  <complexGateway id="cx"/>
  <task id="comp" isForCompensation="true"/>
  <task id="tt"/>
  <task id="t"><standardLoopCharacteristics/></task>
  <adHocSubProcess id="adhoc"><task id="inside"/></adHocSubProcess>
  <endEvent id="shared"><eventDefinitionRef>def1</eventDefinitionRef></endEvent>
  <choreographyActivity id="x"/>
</process>`), "bad.bpmn:4: complexGateway \"cx\": complex gateways are not supported\n" +

			"bad.bpmn:7: task \"t\": standard loops are not supported (model the loop with a gateway, or use multi-instance)\n" +
			"bad.bpmn:8: adHocSubProcess \"adhoc\": ad-hoc sub-processes are not supported (only an empty one, which completes at once)\n" +
			"bad.bpmn:9: endEvent \"shared\": shared event definitions (eventDefinitionRef) are not supported\n" +
			"bad.bpmn:10: choreographyActivity \"x\": unsupported element <choreographyActivity>"},
		{"compensation", doc(`<process id="p">
  <task id="a"/>
  <boundaryEvent id="ab" attachedToRef="a"><compensateEventDefinition/></boundaryEvent>
  <sequenceFlow id="f1" sourceRef="ab" targetRef="h"/>
  <task id="h" isForCompensation="true"/>
  <task id="notHandler"/>
  <association id="as" sourceRef="ab" targetRef="notHandler"/>
  <intermediateThrowEvent id="th"><compensateEventDefinition activityRef="inner"/></intermediateThrowEvent>
  <subProcess id="sub"><task id="inner"/></subProcess>
  <endEvent id="ce"><compensateEventDefinition activityRef="nothing"/></endEvent>
</process>`), "bad.bpmn:5: boundaryEvent \"ab\": compensation boundary events cannot have outgoing sequence flows (associate the handler instead)\n" +
			"bad.bpmn:7: task \"h\": compensation handlers cannot have sequence flows\n" +
			"bad.bpmn:9: association \"as\": a compensation boundary event must be associated with an activity marked isForCompensation=\"true\", not task \"notHandler\"\n" +
			"bad.bpmn:10: intermediateThrowEvent \"th\": activityRef \"inner\" is not an activity of this scope\n" +
			"bad.bpmn:12: endEvent \"ce\": activityRef \"nothing\" names no activity"},
		{"transactions", doc(`<process id="p">
  <endEvent id="outside"><cancelEventDefinition/></endEvent>
  <task id="t"/>
  <boundaryEvent id="onTask" attachedToRef="t"><cancelEventDefinition/></boundaryEvent>
  <transaction id="tx"><endEvent id="inside"><cancelEventDefinition/></endEvent></transaction>
</process>`), "bad.bpmn:4: endEvent \"outside\": cancel end events are only allowed inside a transaction\n" +
			"bad.bpmn:6: boundaryEvent \"onTask\": cancel boundary events attach to transactions, not to task \"t\"\n" +
			"bad.bpmn:7: endEvent \"inside\": transaction \"tx\" has no cancel boundary event to catch the cancellation"},
		{"event definitions in the wrong place", doc(`<process id="p">
  <startEvent id="s1"><errorEventDefinition/></startEvent>
  <subProcess id="sub"><startEvent id="s2"><messageEventDefinition/></startEvent></subProcess>
  <subProcess id="evt" triggeredByEvent="true">
    <startEvent id="s3" isInterrupting="false"><errorEventDefinition/></startEvent>
    <startEvent id="s4"/>
  </subProcess>
  <intermediateThrowEvent id="th"><timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition></intermediateThrowEvent>
  <endEvent id="en"><timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition></endEvent>
  <intermediateCatchEvent id="two"><messageEventDefinition/><timerEventDefinition/></intermediateCatchEvent>
</process>`), "bad.bpmn:4: startEvent \"s1\": error startEvent is not supported\n" +
			"bad.bpmn:5: startEvent \"s2\": message startEvent in a sub-process is not supported\n" +
			"bad.bpmn:7: startEvent \"s3\": error start events always interrupt (remove isInterrupting=\"false\")\n" +
			"bad.bpmn:8: startEvent \"s4\": needs an event definition here\n" +
			"bad.bpmn:10: intermediateThrowEvent \"th\": timer intermediateThrowEvent is not supported\n" +
			"bad.bpmn:11: endEvent \"en\": timer endEvent is not supported\n" +
			"bad.bpmn:12: intermediateCatchEvent \"two\": events with more than one event definition are not supported"},
		{"event sub-process with flows", doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f" sourceRef="s" targetRef="evt"/>
  <subProcess id="evt" triggeredByEvent="true"/>
</process>`), "bad.bpmn:6: subProcess \"evt\": event sub-processes cannot have sequence flows\nbad.bpmn:6: subProcess \"evt\": event sub-process needs a start event"},
		{"event gateway target", doc(`<process id="p">
  <eventBasedGateway id="race"/>
  <sequenceFlow id="f" sourceRef="race" targetRef="t"/>
  <task id="t"/>
</process>`), `bad.bpmn:5: sequenceFlow "f": an eventBasedGateway may only lead to intermediate catch events or receive tasks, not to task "t"`},
		{"conditions after a parallel gateway", doc(`<process id="p">
  <parallelGateway id="fork"/>
  <sequenceFlow id="f" sourceRef="fork" targetRef="t"><conditionExpression>true</conditionExpression></sequenceFlow>
  <task id="t"/>
</process>`), `bad.bpmn:5: sequenceFlow "f": flows leaving a parallelGateway cannot have conditions`},
		{"refs", doc(`<process id="p">
  <intermediateCatchEvent id="c1"><signalEventDefinition signalRef="nope"/></intermediateCatchEvent>
  <intermediateCatchEvent id="c2"><messageEventDefinition messageRef="nope"/></intermediateCatchEvent>
  <endEvent id="e1"><errorEventDefinition errorRef="nope"/></endEvent>
  <endEvent id="e2"><escalationEventDefinition escalationRef="nope"/></endEvent>
</process>`), "bad.bpmn:4: intermediateCatchEvent \"c1\": signalRef \"nope\" names no <signal>\n" +
			"bad.bpmn:5: intermediateCatchEvent \"c2\": messageRef \"nope\" names no <message>\n" +
			"bad.bpmn:6: endEvent \"e1\": errorRef \"nope\" names no <error>\n" +
			"bad.bpmn:7: endEvent \"e2\": escalationRef \"nope\" names no <escalation>"},
		{"timers", doc(`<process id="p">
  <intermediateCatchEvent id="t1"><timerEventDefinition><timeDuration>10 minutes</timeDuration></timerEventDefinition></intermediateCatchEvent>
  <intermediateCatchEvent id="t2"><timerEventDefinition><timeDate>tomorrow</timeDate></timerEventDefinition></intermediateCatchEvent>
  <intermediateCatchEvent id="t3"><timerEventDefinition><timeCycle>often</timeCycle></timerEventDefinition></intermediateCatchEvent>
  <intermediateCatchEvent id="t4"><timerEventDefinition><timeDuration>=a-</timeDuration></timerEventDefinition></intermediateCatchEvent>
</process>`), "bad.bpmn:4: intermediateCatchEvent \"t1\": timeDuration \"10 minutes\": not an ISO 8601 duration (like PT30S)\n" +
			"bad.bpmn:5: intermediateCatchEvent \"t2\": timeDate \"tomorrow\": not an ISO 8601 date-time (like 2026-01-02T15:04:05Z)\n" +
			"bad.bpmn:6: intermediateCatchEvent \"t3\": timeCycle \"often\": not an ISO 8601 repetition (like R3/PT10M) or a cron expression (like 0 0 9-17 * * MON-FRI)\n" +
			"bad.bpmn:7: intermediateCatchEvent \"t4\": timeDuration \"=a-\": unexpected end of expression (column 4)"},
		{"call activity", doc(`<process id="p">
  <callActivity id="c1" calledElement="elsewhere"/>
  <callActivity id="c2"/>
  <callActivity id="c3"><extensionElements><zeebe:calledElement processId="=dynamic"/></extensionElements></callActivity>
</process>`), "bad.bpmn:4: callActivity \"c1\": calledElement \"elsewhere\" names no process in this file\n" +
			"bad.bpmn:5: callActivity \"c2\": missing calledElement (the id of the process to call)\n" +
			"bad.bpmn:6: callActivity \"c3\": calledElement \"=dynamic\": dynamic process ids are not supported"},
		{"multi-instance", doc(`<process id="p">
  <task id="t1"><multiInstanceLoopCharacteristics/></task>
  <task id="t2"><multiInstanceLoopCharacteristics><loopCardinality>=3 +</loopCardinality></multiInstanceLoopCharacteristics></task>
  <task id="t3"><multiInstanceLoopCharacteristics><extensionElements>
    <zeebe:loopCharacteristics inputCollection="=items[" inputElement="item"/>
  </extensionElements></multiInstanceLoopCharacteristics></task>
  <exclusiveGateway id="g"><multiInstanceLoopCharacteristics/></exclusiveGateway>
  <sequenceFlow id="f" sourceRef="g" targetRef="t1"/>
</process>`), "bad.bpmn:4: task \"t1\": multi-instance needs an input collection or a loopCardinality\n" +
			"bad.bpmn:5: task \"t2\": loopCardinality \"=3 +\": unexpected end of expression (column 5)\n" +
			"bad.bpmn:7: task \"t3\": inputCollection \"=items[\": unexpected end of expression (column 8)\n" +
			"bad.bpmn:9: exclusiveGateway \"g\": multi-instance is only allowed on activities"},
		{"unknown element", doc(`<process id="p">
  <task id="t"><bogus/></task>
  <frobnicate id="f"/>
</process>
<mystery/>`), "bad.bpmn:4: task \"t\": unsupported element <bogus>\n" +
			"bad.bpmn:5: frobnicate \"f\": unsupported element <frobnicate>\n" +
			"bad.bpmn:7: mystery: unsupported element <mystery>"},
		{"participants and message flows", doc(`<collaboration id="c">
  <participant id="pa" processRef="missing"/>
  <messageFlow id="m1" sourceRef="ghost" targetRef="pa"/>
</collaboration>
<process id="p"/>`), "bad.bpmn:4: participant \"pa\": processRef \"missing\" names no process\n" +
			"bad.bpmn:5: messageFlow \"m1\": sourceRef \"ghost\" names no flow node or participant"},
		{"encoding", `<?xml version="1.0" encoding="EBCDIC"?><definitions/>`, `bad.bpmn:1: invalid XML: unsupported encoding "EBCDIC" (save the file as UTF-8)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New().Load(context.Background(), &sdk.LoadRequest{Name: "bad.bpmn", Routine: []byte(tt.src)})
			if err == nil {
				t.Fatal("loaded; want problems")
			}
			var e *sdk.Error
			if !errors.As(err, &e) || e.Code != sdk.CodeInvalid {
				t.Fatalf("want an sdk invalid error, got %T %v", err, err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("problems:\n got %s\nwant %s", strings.ReplaceAll(got, "\n", "\n     "), strings.ReplaceAll(tt.want, "\n", "\n     "))
			}
			for _, p := range e.Problems {
				if p.Line <= 0 {
					t.Errorf("problem without a line: %s", p)
				}
			}
		})
	}
}
