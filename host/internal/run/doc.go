// Package run drives routine instances for the host: it owns the token
// state that navigators only read, applies their decisions, runs the steps
// at ready tokens, and enforces the run's limits.
//
// Simulate is the dry-run driver behind `sextant routine simulate` and the
// navigators' conformance harness: it walks any navigator without running
// steps and prints one enter/exit line per node.
//
// The package talks to navigators only through the sdk.Navigator
// interface, so builtin, wasm and process navigators behave the same here.
package run
