package dag

import (
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// RoutineKeys documents the top-level keys of a DAG routine file and
// TaskKeys those of each [tasks.ID] table, for the reference docs
// (docs/reference/routines.md). TestKeysDocumented holds them to the keys
// the loader accepts.
var (
	RoutineKeys = []sdk.ConfigField{
		{Name: keyName, Type: "string", Required: true, Doc: "the routine id"},
		{Name: keyDescription, Type: "string", Doc: "what the routine does"},
		{Name: keyTasks, Type: "table", Required: true, Doc: "[tasks.ID]: one table per task; the key is the task id, which names the pipeline's [steps.ID]"},
	}
	TaskKeys = []sdk.ConfigField{
		{Name: keyName, Type: "string", Doc: "a display name"},
		{Name: keyDescription, Type: "string", Doc: "what the task does"},
		{Name: keyDependsOn, Type: "list", Doc: "upstream task ids"},
		{Name: keyWhen, Type: "string", Doc: "expr-lang condition over input, vars, strategy, evaluated when the task is to run; false skips it"},
		{Name: keyTriggerRule, Type: "string", Default: ruleNames[allSuccess], Doc: "Airflow trigger rule: " + strings.Join(ruleNames[:], ", ")},
		{Name: keyRetries, Type: "number", Default: 0, Doc: "retries after a failure (at most 1000)"},
		{Name: keyRetryDelay, Type: "duration", Default: defaultRetryDelay.String(), Doc: "first retry delay, doubled each retry"},
		{Name: keyMaxRetryDelay, Type: "duration", Default: defaultMaxRetryDelay.String(), Doc: "cap on the retry delay"},
		{Name: keyForEach, Type: "string", Doc: "expr-lang expression giving a list: one instance per element (at most 1024)"},
		{Name: keySetup, Type: "bool", Doc: "a setup task: tasks downstream of it run only when it succeeded (all_done_setup_success)"},
		{Name: keyInputs, Type: "list", Doc: "variables the step reads (informative)"},
		{Name: keyOutputs, Type: "list", Doc: "variables the step writes; a for_each task gets each as the list of its instances' values"},
	}
)
