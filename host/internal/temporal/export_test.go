package temporal

import (
	"go.temporal.io/sdk/workflow"

	"github.com/sextant-dev/sextant/host/internal/run"
)

// SetNotFoundHook sets the hook run when a call to a workflow is refused
// as NotFound, before the workflow is looked up; nil removes it.
func SetNotFoundHook(f func(task string)) { notFoundHook = f }

// ReplayWorkflow is the workflow as a replayer registers it: a replay
// runs no activity, so its worker needs neither client nor pipelines.
func ReplayWorkflow() func(workflow.Context, RunInput) (*run.Result, error) {
	return (&Worker{acts: &activities{}}).Workflow
}
