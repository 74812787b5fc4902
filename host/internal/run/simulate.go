package run

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// DefaultMaxSteps bounds the navigator calls of one simulation when
// SimOptions.MaxSteps is zero.
const DefaultMaxSteps = 10000

// SimOptions configures Simulate.
type SimOptions struct {
	// Vars are the instance variables (`--set k=v`); conditions see them as
	// vars.NAME and by name.
	Vars map[string]any
	// Input and Strategy complete the environment conditions see.
	Input    map[string]any
	Strategy map[string]any
	// Choose fixes the outgoing flows a gateway without conditions takes
	// (`--choose GW=FLOW,FLOW`). A gateway not listed takes its first
	// outgoing flow (exclusive) or all of them (inclusive).
	Choose map[string][]string
	// Triggers are delivered in order (`--trigger ID`), each once nothing
	// else can move: to the oldest token waiting for it, or, for a start
	// event, as a new instance. When the first trigger does not start the
	// routine, the routine starts at its none start event.
	Triggers []string
	// MaxSteps bounds the navigator calls; 0 means DefaultMaxSteps.
	MaxSteps int
	// Routine is the navigator's summary of the loaded routine. When set,
	// every decision is checked against its nodes (see ErrDecision);
	// without it only what needs no routine is checked.
	Routine *sdk.Routine
}

// SimStatus is how a simulation ended.
type SimStatus string

// The simulation outcomes.
const (
	// SimCompleted: every instance ran to its end.
	SimCompleted SimStatus = "completed"
	// SimWaiting: tokens wait for triggers that were not given (or at a join
	// that can never fire).
	SimWaiting SimStatus = "waiting"
	// SimError: a fault nothing caught, a trigger nothing waits for, or the
	// step limit.
	SimError SimStatus = "error"
)

// SimResult is the outcome of Simulate.
type SimResult struct {
	// Events is the trace: one enter or exit per node, in order.
	Events []sdk.Event `json:"events"`
	Status SimStatus   `json:"status"`
	// Waiting lists the nodes where tokens wait, with SimWaiting.
	Waiting []string `json:"waiting,omitempty"`
	// Error names the node and what went wrong, with SimError.
	Error string `json:"error,omitempty"`
	// Lines is the printed form: "enter:ID" and "exit:ID" per event, then
	// "completed", "waiting:ID,ID" or "error:MESSAGE".
	Lines []string `json:"lines"`
	// Steps counts the navigator calls.
	Steps int `json:"steps"`
}

// Text returns the lines, one per line, with a final newline.
func (r *SimResult) Text() string { return strings.Join(r.Lines, "\n") + "\n" }

// Simulate walks a loaded routine without running steps: ready tokens
// complete at once with an OK outcome, choices are answered from
// opts.Choose, and receive tasks, catch events, event-based gateways and
// boundary events wait until opts.Triggers fire them, in order. A trigger
// that names a boundary event of a ready token fires it instead of
// completing the token.
//
// Simulate returns an error for a cancelled context and for a navigator
// call that fails (for example a --choose naming a flow the gateway does
// not have); a fault in the routine, a trigger nothing waits for and the
// step limit end the simulation with SimError instead.
func Simulate(ctx context.Context, nav sdk.Navigator, routineHash string, opts SimOptions) (*SimResult, error) {
	s := &sim{
		ctx:       ctx,
		nav:       nav,
		opts:      opts,
		max:       opts.MaxSteps,
		decisions: newDecisions(nav.Describe().Name, opts.Routine),
		st: sdk.State{Routine: routineHash, Env: sdk.Env{
			Input: opts.Input, Vars: opts.Vars, Strategy: opts.Strategy,
		}},
	}
	if s.max <= 0 {
		s.max = DefaultMaxSteps
	}
	err := s.run()
	if err != nil {
		return nil, err
	}
	return s.result(), nil
}

type sim struct {
	ctx      context.Context
	nav      sdk.Navigator
	opts     SimOptions
	max      int
	st       sdk.State
	events   []sdk.Event
	choice   *sdk.Choice
	fault    *sdk.Fault
	failure  string // a simulation error that is not a fault
	steps    int
	triggers []string
	// decisions checks every decision before it is applied.
	decisions decisions
}

// errStop ends the walk early with a result (not a Go error).
var errStop = errors.New("stop")

func (s *sim) run() error {
	s.triggers = append([]string(nil), s.opts.Triggers...)
	started := false
	if len(s.triggers) > 0 {
		d, err := s.nav.Start(s.ctx, &sdk.StartRequest{State: s.st, Trigger: s.triggers[0]})
		if err == nil {
			s.steps++
			s.triggers = s.triggers[1:]
			started = true
			if err := s.apply(navCall{"start at", s.opts.Triggers[0]}, d); err != nil {
				return s.stopped(err)
			}
		} else if ctxErr := s.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
	}
	if !started {
		s.steps++
		d, err := s.nav.Start(s.ctx, &sdk.StartRequest{State: s.st})
		if err != nil {
			if ctxErr := s.ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			var e *sdk.Error
			if errors.As(err, &e) && e.Code == sdk.CodeInvalid {
				s.failure = e.Error()
				return nil
			}
			return fmt.Errorf("simulate: start: %w", err)
		}
		if err := s.apply(navCall{what: "start"}, d); err != nil {
			return s.stopped(err)
		}
	}
	for s.fault == nil {
		moved, err := s.step()
		if err != nil {
			return s.stopped(err)
		}
		if moved {
			continue
		}
		if len(s.triggers) == 0 {
			return nil
		}
		id := s.triggers[0]
		s.triggers = s.triggers[1:]
		if err := s.trigger(id); err != nil {
			return s.stopped(err)
		}
	}
	return nil
}

func (s *sim) stopped(err error) error {
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// apply checks a decision (call names the navigator call that returned
// it), records it and applies it to the state.
func (s *sim) apply(call navCall, d *sdk.Decision) error {
	next, err := s.decisions.apply(call, s.st, d)
	if err != nil {
		return err
	}
	s.events = append(s.events, d.Trace...)
	s.st = next
	s.choice = d.Choice
	if d.Fault != nil {
		s.fault = d.Fault
		return errStop
	}
	return nil
}

// call runs one navigator call, counting it against the step limit.
func (s *sim) call(what string, node string, f func() (*sdk.Decision, error)) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if s.steps >= s.max {
		s.failure = fmt.Sprintf("more than %d steps, stopped at %q (raise the limit, or look for a loop)", s.max, node)
		return errStop
	}
	s.steps++
	d, err := f()
	if err != nil {
		if ctxErr := s.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("simulate: %s %q: %w", what, node, err)
	}
	return s.apply(navCall{what, node}, d)
}

// step answers the pending choice or completes the first ready token; it
// reports false when nothing can move without a trigger.
func (s *sim) step() (bool, error) {
	if c := s.choice; c != nil {
		flows, ok := s.opts.Choose[c.Node]
		if !ok && len(c.Flows) > 0 {
			flows = []string{c.Flows[0].ID}
			if c.Multi {
				flows = flows[:0]
				for _, f := range c.Flows {
					flows = append(flows, f.ID)
				}
			}
		}
		token := c.Token
		return true, s.call("choose at", c.Node, func() (*sdk.Decision, error) {
			return s.nav.Next(s.ctx, &sdk.NextRequest{State: s.st, Token: token, Outcome: sdk.Outcome{Status: sdk.OK, Flows: flows}})
		})
	}
	for _, t := range s.st.Tokens {
		if t.Status != sdk.Ready {
			continue
		}
		id := t.ID
		if len(s.triggers) > 0 && contains(t.Triggers, s.triggers[0]) {
			ev := s.triggers[0]
			s.triggers = s.triggers[1:]
			return true, s.call("trigger", ev, func() (*sdk.Decision, error) {
				return s.nav.Boundary(s.ctx, &sdk.BoundaryRequest{State: s.st, Token: id, Event: ev})
			})
		}
		return true, s.call("complete", t.Node, func() (*sdk.Decision, error) {
			return s.nav.Next(s.ctx, &sdk.NextRequest{State: s.st, Token: id, Outcome: sdk.Outcome{Status: sdk.OK}})
		})
	}
	return false, nil
}

// trigger delivers event id to the oldest token waiting for it, or starts
// a new instance at it.
func (s *sim) trigger(id string) error {
	for _, t := range s.st.Tokens {
		if contains(t.Triggers, id) {
			tok := t.ID
			return s.call("trigger", id, func() (*sdk.Decision, error) {
				return s.nav.Boundary(s.ctx, &sdk.BoundaryRequest{State: s.st, Token: tok, Event: id})
			})
		}
	}
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if s.steps >= s.max {
		s.failure = fmt.Sprintf("more than %d steps, stopped at %q (raise the limit, or look for a loop)", s.max, id)
		return errStop
	}
	s.steps++
	d, err := s.nav.Start(s.ctx, &sdk.StartRequest{State: s.st, Trigger: id})
	if err != nil {
		if ctxErr := s.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		waiting := s.waiting()
		msg := fmt.Sprintf("trigger %q: nothing waits for it", id)
		if len(waiting) > 0 {
			msg += " (waiting: " + strings.Join(waiting, ",") + ")"
		}
		s.failure = msg
		return errStop
	}
	return s.apply(navCall{"start at", id}, d)
}

// waiting lists the nodes where tokens wait, in state order.
func (s *sim) waiting() []string {
	var ids []string
	for _, t := range s.st.Tokens {
		if t.Status == sdk.Scope || contains(ids, t.Node) {
			continue
		}
		ids = append(ids, t.Node)
	}
	return ids
}

func (s *sim) result() *SimResult {
	r := &SimResult{Events: s.events, Steps: s.steps}
	if r.Events == nil {
		r.Events = []sdk.Event{}
	}
	switch {
	case s.fault != nil:
		r.Status, r.Error = SimError, s.fault.Message
	case s.failure != "":
		r.Status, r.Error = SimError, s.failure
	case len(s.st.Tokens) == 0:
		r.Status = SimCompleted
	default:
		r.Status, r.Waiting = SimWaiting, s.waiting()
	}
	r.Lines = make([]string, 0, len(r.Events)+1)
	for _, e := range r.Events {
		r.Lines = append(r.Lines, string(e.Type)+":"+e.Node)
	}
	switch r.Status {
	case SimCompleted:
		r.Lines = append(r.Lines, "completed")
	case SimWaiting:
		r.Lines = append(r.Lines, "waiting:"+strings.Join(r.Waiting, ","))
	default:
		r.Lines = append(r.Lines, "error:"+r.Error)
	}
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
