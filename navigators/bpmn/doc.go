// Package bpmn is sextant's BPMN 2.0 navigator: it loads diagrams saved by
// Camunda Modeler, bpmn.io and Zeebe tooling and says, token by token,
// where execution goes next.
//
// The navigator keeps no run state. The host passes the tokens of an
// instance in every call (sdk.State) and applies the Decision that comes
// back; the only thing the navigator remembers is the parsed routine,
// cached by the sha256 of its bytes. The same request always gives the same
// Decision.
//
// What it runs: start events (none, message, timer, signal), end events
// (none, terminate, error, escalation, signal, message), every task type,
// sequence flows with conditions and default flows, exclusive, parallel,
// inclusive and event-based gateways, boundary events (timer, error,
// message, signal, escalation; interrupting or not), intermediate catch
// and throw events (timer, message, signal, link), embedded and event
// sub-processes, call activities (a process of the same file), and
// multi-instance activities (parallel or sequential), compensation
// (handlers, compensation throw and end events, compensation event
// sub-processes) and transactions with cancel end and boundary events.
// Message flows of a collaboration deliver messages between its processes.
// Anything else in the BPMN namespace (complex gateways, ad-hoc
// sub-processes with content, standard loops, choreographies) is a
// validation problem naming the element and its line: never ignored, never
// a panic. So are the Camunda 7 extensions that move data or run code
// (camunda:inputOutput, in/out, listeners, decisionRef).
//
// Conditions, multi-instance collections and conditions, input/output
// mapping sources and timer expressions are FEEL (package
// navigators/feel), parsed once at Load and evaluated over input, vars,
// strategy and token, and every process variable by its own name. A
// leading "=" marks the Zeebe style; text without it is FEEL too.
// "${...}" (Camunda 7 JUEL) is read through a translation of its common
// operators.
//
// Execution order follows bpmn-js-token-simulation, whose test scenarios
// the package's conformance test replays; see conformance_test.go.
//
// The package imports only the sdk and navigators/feel; it must not import
// the host.
package bpmn
