package chain

import "github.com/sextant-dev/sextant/sdk"

// RoutineKeys documents the top-level keys of a chain routine file and
// StepKeys those of each [[steps]] (and [[steps.chain]]) table, for the
// reference docs (docs/reference/routines.md). TestKeysDocumented holds
// them to the keys the loader accepts.
var (
	RoutineKeys = []sdk.ConfigField{
		{Name: keyName, Type: "string", Required: true, Doc: "the routine id"},
		{Name: keyDescription, Type: "string", Doc: "what the routine does"},
		{Name: keyInputs, Type: "list", Doc: "the variables the chain starts with (from the task's input)"},
		{Name: keyOutputs, Type: "list", Doc: "the chain's outputs; default: the last step's outputs"},
		{Name: keySteps, Type: "table", Required: true, Doc: "[[steps]]: the steps, run one at a time in order"},
	}
	StepKeys = []sdk.ConfigField{
		{Name: keyID, Type: "string", Required: true, Doc: "unique in the routine, nested steps included; names the pipeline's [steps.ID]"},
		{Name: keyName, Type: "string", Doc: "a display name"},
		{Name: keyDescription, Type: "string", Doc: "what the step does"},
		{Name: keyInputs, Type: "list", Doc: "variables the step reads: each a chain input or an earlier step's output"},
		{Name: keyOutputs, Type: "list", Doc: "variables the step writes; none may overwrite one that exists"},
		{Name: keySkipIf, Type: "string", Doc: "expr-lang condition over input, vars, strategy: true passes the step over"},
		{Name: keyChain, Type: "table", Doc: "[[steps.chain]]: a sub-chain with these same keys; the host runs its inner steps, not the step itself"},
	}
)
