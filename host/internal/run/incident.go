package run

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Incidents, as Zeebe raises them. Where a run cannot go on without a
// person — a condition that errs or is not a boolean, a message
// correlation key that is not a string or a number (null), a step whose
// retries are used up and whose failure nothing catches — it stops in
// status incident instead of failing. The checkpoint keeps the state from
// before the navigator call that raised it, so `sextant retry TASK --set
// NAME=VALUE` changes variables and makes that call again: the call after
// the step (the step's outcome is kept, handed over again and counted
// once), the start, or — when the step itself failed — the step, which
// runs once more.

// The kinds of store.Incident.
const (
	IncidentCondition   = "condition"
	IncidentCorrelation = "correlation"
	IncidentRetries     = "retries"
	IncidentFault       = "fault"
)

// faultError is a navigator's Fault: the routine cannot go on.
type faultError struct{ f *sdk.Fault }

func (e *faultError) Error() string {
	return fmt.Sprintf("routine failed at %q: %s", e.f.Node, e.f.Message)
}

// incidentError stops a run in an incident (see exec.incident).
type incidentError struct {
	node, kind, msg string
}

func (e *incidentError) Error() string { return "incident at " + e.node + ": " + e.msg }

// incidentOf turns what a navigator call answered into an incident, when
// it is one: err from apply, or a decision that left a token waiting
// for a message whose correlation key did not evaluate. res is the step
// whose outcome was handed over (nil at the start); tok its token, as it
// was before the call in before.
func (e *exec) incidentOf(err error, tok string, res *stepResult, before *sdk.State) *incidentError {
	if err != nil {
		var fe *faultError // declared here: only an error pays for the target
		if !errors.As(err, &fe) {
			return nil
		}
		if res != nil && res.Outcome.Status == sdk.Failed {
			t := tokenIn(before, tok)
			if t == nil || t.Attempt == 0 {
				return nil // a step with no retries fails the run, as it always did
			}
			// Whatever the navigator calls it (a DAG's task_failed), a
			// failure after retries that nothing handles waits for a person.
			return &incidentError{node: t.Node, kind: IncidentRetries, msg: fmt.Sprintf("retries used up (%d): %s", t.Attempt, res.Err)}
		}
		if fe.f.Code != "" {
			return nil // an error the routine throws (a BPMN error end event) fails the run
		}
		node := fe.f.Node
		if node == "" {
			node = e.tokenNode(tok)
		}
		switch {
		case strings.Contains(fe.f.Message, "condition"):
			return &incidentError{node: node, kind: IncidentCondition, msg: fe.f.Message}
		}
		return &incidentError{node: node, kind: IncidentFault, msg: fe.f.Message}
	}
	for _, t := range e.st.Nav.Tokens {
		m, ok := t.Attrs[attrCorrelations].(map[string]any)
		if !ok {
			continue
		}
		for _, ev := range sortedKeys(m) {
			if bad, ok := m[ev].(map[string]any); ok {
				return &incidentError{node: ev, kind: IncidentCorrelation, msg: fmt.Sprint(bad["error"])}
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	if len(keys) > 1 {
		sortStrings(keys)
	}
	return keys
}

// tokenIn is token id in st, or nil.
func tokenIn(st *sdk.State, id string) *sdk.Token {
	if st == nil {
		return nil
	}
	for i := range st.Tokens {
		if st.Tokens[i].ID == id {
			return &st.Tokens[i]
		}
	}
	return nil
}

// afterStep is what handOverOf does when the navigator call after token
// tok's step raised an incident: the state goes back to before the call
// (before), and the step's outcome waits to be handed over again on
// retry — or, when the step failed, the step runs again.
func (e *exec) afterStep(inc *incidentError, tok string, res *stepResult, before sdk.State) {
	e.st.Nav = before
	e.st.Complete = false
	if inc.kind == IncidentRetries {
		return // no outcome kept: the token is ready, its step runs on retry
	}
	e.st.Done[tok] = &stepResult{Outcome: res.Outcome, Err: res.Err, Handed: true}
}

// leadingPosition is a "file:line: " that starts a navigator's message.
var leadingPosition = regexp.MustCompile(`^(\S+:\d+): (.*)$`)

// position is where node is written: the routine file (as the pipeline
// names it) and the node's line.
func (e *exec) position(node string) string {
	n, ok := e.r.nodes[node]
	if !ok || n.Line == 0 {
		return ""
	}
	file := e.r.cfg.Pipeline.Routine.File
	if file == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", filepath.Base(file), n.Line)
}

// incident records a run stopped in an incident: its checkpoint (the
// state before the call that raised it), the execution in status
// incident, the task with the incident.
func (e *exec) incident(ctx context.Context, inc *incidentError) (*Result, error) {
	ctx = context.WithoutCancel(ctx)
	rec := &store.Incident{Node: inc.node, Kind: inc.kind, Error: inc.msg, Position: e.position(inc.node), Created: e.r.cfg.Clock()}
	if m := leadingPosition.FindStringSubmatch(inc.msg); m != nil {
		// The navigator said where (the sequence flow of a condition):
		// more precise than the node's line.
		rec.Position, rec.Error = m[1], m[2]
	}
	msg := rec.String()
	if err := e.checkpoint(ctx); err != nil {
		return nil, err
	}
	j := e.r.cfg.Journal
	ex, err := j.Execution(ctx, e.task.ID, e.id)
	if err != nil {
		return nil, err
	}
	ex.Status, ex.Error = store.StatusIncident, msg
	if err := j.PutExecution(ctx, ex); err != nil {
		return nil, err
	}
	if s, ok := j.(*store.Store); ok {
		err = s.UpdateTask(ctx, e.task.ID, func(t *store.Task) error {
			t.Status, t.Waits, t.Owner, t.Cancelled = store.StatusIncident, nil, nil, nil
			t.Incident = rec
			return nil
		})
	} else {
		err = j.SetTaskStatus(ctx, e.task.ID, store.StatusIncident)
	}
	if err != nil {
		return nil, err
	}
	res := e.result(store.StatusIncident, msg)
	res.Incident = rec
	return res, nil
}

// Retry continues a task stopped in an incident: sets are assigned to its
// variables (recorded, so that a replay assigns them at the same point),
// and the navigator call that raised the incident is made again (see the
// package's incident notes). A task not in an incident is an error that
// changes nothing.
func (r *Runner) Retry(ctx context.Context, taskID string, sets map[string]any) (*Result, error) {
	ctx, tracked, err := track(ctx, taskID)
	if err != nil {
		return nil, err
	}
	defer tracked.untrack()
	t, err := r.cfg.Store.Task(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if t.Status != store.StatusIncident {
		return nil, refused{&store.StateError{Kind: store.ErrConflict, Msg: fmt.Sprintf("task %s is %s, not in an incident: nothing to retry", taskID, t.Status)}}
	}
	e, res, err := r.load(ctx, taskID)
	if e == nil {
		return res, err
	}
	if err := r.claim(ctx, taskID, store.StatusIncident); err != nil {
		return nil, err
	}
	if err := e.assign(ctx, setRetry, sets); err != nil {
		return nil, err
	}
	if len(e.st.Nav.Tokens) == 0 && !e.st.Complete {
		// The incident came with the start: start again.
		d, err := r.cfg.Navigator.Start(ctx, &sdk.StartRequest{State: e.navState(), Trigger: e.task.Start})
		if err != nil {
			return e.finish(ctx, fmt.Errorf("start: %w", err))
		}
		initial := e.st.Nav
		err = e.apply(ctx, navCall{what: "start"}, d)
		if inc := e.incidentOf(err, "", nil, nil); inc != nil {
			e.st.Nav = initial
			return e.incident(ctx, inc)
		}
		if err != nil {
			return e.finish(ctx, err)
		}
		if err := e.checkpoint(ctx); err != nil {
			return nil, err
		}
	}
	return e.drive(ctx)
}

// The pseudo-nodes under which an operator's variables are recorded (as
// human answers, store.HumanKey): no routine node id has an "@".
const (
	setRetry = "@retry"
	setSet   = "@set"
)

// assign sets variables for an operator (retry --set, set) and records
// them, with the number of steps the run had completed, so that a replay
// assigns them at the same point.
func (e *exec) assign(ctx context.Context, kind string, vars map[string]any) error {
	if len(vars) == 0 {
		return nil
	}
	next := maps.Clone(e.st.Nav.Env.Vars)
	if next == nil {
		next = map[string]any{}
	}
	maps.Copy(next, vars)
	e.st.Nav.Env.Vars = next
	if e.replaying() {
		return nil
	}
	e.st.answered(kind, 1)
	return e.putAnswer(ctx, kind, e.st.Answers[kind], "", map[string]any{"at": e.st.Steps, "vars": vars})
}

// recorded is the next recorded operator's assignment of kind, in a
// replay, when it was made after the run's current number of steps.
func (e *exec) recorded(ctx context.Context, kind string) (map[string]any, bool) {
	if !e.replaying() {
		return nil, false
	}
	a, ok := e.r.cfg.Answer(ctx, e.task.ID, kind, e.st.Answers[kind]+1)
	if !ok {
		return nil, false
	}
	if at, _ := toFloat(a["at"]); int(at) != e.st.Steps {
		return nil, false
	}
	vars, _ := a["vars"].(map[string]any)
	e.st.answered(kind, 1)
	next := maps.Clone(e.st.Nav.Env.Vars)
	if next == nil {
		next = map[string]any{}
	}
	maps.Copy(next, vars)
	e.st.Nav.Env.Vars = next
	return vars, true
}

// retried reports whether a replay retried an incident as the recorded
// run was retried (its variables are assigned).
func (e *exec) retried(ctx context.Context) bool {
	_, ok := e.recorded(ctx, setRetry)
	return ok
}

// Set assigns variables to a task that waits (for a person, a timer, a
// message…) or stopped in an incident, without running it: they are part
// of its next checkpoint and recorded, so that a replay assigns them at
// the same point. A task in any other status is an error that changes
// nothing.
func (r *Runner) Set(ctx context.Context, taskID string, vars map[string]any) (*Result, error) {
	ctx, tracked, err := track(ctx, taskID)
	if err != nil {
		return nil, err
	}
	defer tracked.untrack()
	t, err := r.cfg.Store.Task(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if t.Status != store.StatusWaiting && t.Status != store.StatusIncident {
		return nil, refused{&store.StateError{Kind: store.ErrConflict, Msg: fmt.Sprintf("task %s is %s: only a waiting task or one in an incident takes variables", taskID, t.Status)}}
	}
	if len(vars) == 0 {
		return nil, sdk.Errorf(sdk.CodeInvalid, "name the variables to set (NAME=VALUE)")
	}
	e, res, err := r.load(ctx, taskID)
	if e == nil {
		return res, err
	}
	if err := e.assign(ctx, setSet, vars); err != nil {
		return nil, err
	}
	if err := e.checkpoint(ctx); err != nil {
		return nil, err
	}
	res = e.result(t.Status, "")
	res.Waits, res.Incident = t.Waits, t.Incident
	return res, nil
}

// applySets, in a replay, assigns the variables an operator set (sextant
// set) while the recorded run waited after as many steps as the replay
// has now completed.
func (e *exec) applySets(ctx context.Context) {
	for {
		if _, ok := e.recorded(ctx, setSet); !ok {
			return
		}
	}
}
