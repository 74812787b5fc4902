// Package builtins links the first-party navigators and plugins into
// sextant: each registers itself with sdk.Register in init, and the host
// finds them through the registry (sdk.Registered), never by import. The
// registry lists them last on the search path, so an installed plugin of
// the same name overrides one.
//
// It is the one host package that imports their implementations
// (host/cli's layers test checks it). What else the CLI needs from them
// it gets here: the key tables its reference docs are generated from, and
// the FEEL and DMN libraries behind `sextant expr` and `sextant decide`.
package builtins

import (
	"context"
	"errors"

	"github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/navigators/chain"
	"github.com/sextant-dev/sextant/navigators/dag"
	"github.com/sextant-dev/sextant/navigators/dmn"
	"github.com/sextant-dev/sextant/navigators/feel"
	_ "github.com/sextant-dev/sextant/plugins/anthropic"
	_ "github.com/sextant-dev/sextant/plugins/openai"
	_ "github.com/sextant-dev/sextant/plugins/records"
	"github.com/sextant-dev/sextant/plugins/script"
)

// The key tables of the builtin formats, as their loaders read them: the
// reference docs and JSON Schemas are generated from them.
var (
	// DAGRoutineKeys are a DAG routine's top-level keys.
	DAGRoutineKeys = dag.RoutineKeys
	// DAGTaskKeys are the keys of a DAG routine's [tasks.NAME].
	DAGTaskKeys = dag.TaskKeys
	// ChainRoutineKeys are a chain routine's top-level keys.
	ChainRoutineKeys = chain.RoutineKeys
	// ChainStepKeys are the keys of a chain routine's [[steps]].
	ChainStepKeys = chain.StepKeys
	// ScriptRuleKeys are the keys of a scripted provider's [[rule]] and
	// [default].
	ScriptRuleKeys = script.RuleKeys
	// ScriptToolCallKeys are the keys of a rule's [[rule.tool_calls]].
	ScriptToolCallKeys = script.ToolCallKeys
)

// Element is a BPMN element the BPMN navigator knows.
type Element struct {
	// Tag is the element's local name in the BPMN model namespace.
	Tag string
	// Supported is false for elements the loader refuses.
	Supported bool
	// Note says what the navigator does with it, or why it is refused.
	Note string
}

// BPMNElements lists the BPMN elements the BPMN navigator knows, in the
// order of its reference page.
func BPMNElements() []Element {
	els := bpmn.Elements()
	out := make([]Element, len(els))
	for i, el := range els {
		out[i] = Element{Tag: el.Tag, Supported: el.Supported, Note: el.Note}
	}
	return out
}

// FEELExpr is a parsed FEEL expression.
type FEELExpr interface {
	// Eval evaluates the expression over vars.
	Eval(vars map[string]any) (any, error)
}

// ParseFEEL parses a FEEL expression whose variables are named names (so
// that names with spaces read as one).
func ParseFEEL(src string, names ...string) (FEELExpr, error) {
	x, err := feel.Parse(src, feel.WithNames(names...))
	if err != nil {
		return nil, err
	}
	return x, nil
}

// FormatFEEL is v as FEEL text: strings quoted, dates as @"2024-01-31".
func FormatFEEL(v any) string { return feel.Format(v) }

// FEELJSON is v as JSON: numbers as numbers, dates, times and durations
// as FEEL's string() form, contexts as objects.
func FEELJSON(v any) ([]byte, error) { return feel.MarshalJSON(v) }

// FEELBuiltins names FEEL's built-in functions.
func FEELBuiltins() []string { return feel.Builtins() }

// DMNMaxSize is the largest DMN model (and decide input) read, in bytes.
const DMNMaxSize = dmn.MaxSize

// DMNModel is a loaded DMN model.
type DMNModel interface {
	// Evaluate evaluates the decision or decision service name (or id)
	// over inputs, by name.
	Evaluate(ctx context.Context, name string, inputs map[string]any) (any, error)
}

// ParseDMNFile loads the DMN model in path; its errors are positioned.
func ParseDMNFile(path string) (DMNModel, error) {
	m, err := dmn.ParseFile(path)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// DMNInvalid reports whether an evaluation error is the model's or the
// input's fault (a positioned model error, an unknown decision, an input
// of the wrong type) rather than the evaluation's (a limit exceeded).
func DMNInvalid(err error) bool {
	var me *dmn.Error
	return errors.As(err, &me) || errors.Is(err, dmn.ErrNoDecision) || errors.Is(err, dmn.ErrType)
}
