package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Events a run waits for are kept in its checkpoint (runState.Events) with
// absolute due times: a run restarted after a crash finds its timers where
// they were, never restarted. They are recomputed from the tokens after
// every navigator decision (syncWaits); a wait already known keeps its due
// time.

// Delivery is a message or signal given to a waiting task.
type Delivery struct {
	// Kind is store.WaitMessage or store.WaitSignal.
	Kind string `json:"kind"`
	// Name is the message or signal name (a message may also name the
	// event node it is for).
	Name string `json:"name"`
	// Vars are the event's variables, set in the run's vars before the
	// navigator sees the event.
	Vars map[string]any `json:"vars,omitempty"`
	// Key, when set, is the message's correlation key: only a
	// subscription with that key receives it.
	Key string `json:"key,omitempty"`
}

// Inbound is a delivery from another process to a run that waits in the
// foreground (Config.Inbox).
type Inbound struct {
	Delivery Delivery
	// Done receives the outcome once the run took the delivery: nil when
	// delivered, a *NoWaiterError when the run does not wait for it, or
	// the error that ended the run. It must have room for one value.
	Done chan<- error
}

// poll takes a delivery from the inbox if one is there.
func (e *exec) poll() (Inbound, bool) {
	if e.r.cfg.Inbox == nil || e.replaying() {
		return Inbound{}, false
	}
	select {
	case in := <-e.r.cfg.Inbox:
		return in, true
	default:
		return Inbound{}, false
	}
}

// accept delivers an inbound delivery and tells its sender how it went;
// the error is one that ends the run.
func (e *exec) accept(ctx context.Context, in Inbound) error {
	e.syncWaits()
	if len(e.match(in.Delivery)) == 0 {
		in.Done <- &NoWaiterError{Task: e.task.ID, Kind: in.Delivery.Kind, Name: in.Delivery.Name, Key: in.Delivery.Key, Waits: e.waits()}
		return nil
	}
	_, err := e.deliver(ctx, in.Delivery)
	in.Done <- err
	return err
}

// ErrNoWaiter marks a delivery that nothing in the task waits for (the
// error is a *NoWaiterError, which is also sdk.ErrInvalid: exit 2).
var ErrNoWaiter = errors.New("nothing waits for the event")

// NoWaiterError is a delivery the task does not wait for.
type NoWaiterError struct {
	Task string
	// Kind, Name and Key are the delivery's.
	Kind, Name, Key string
	// Waits is what the task waits for instead.
	Waits []store.Wait
}

func (e *NoWaiterError) Error() string {
	what := fmt.Sprintf("%s %q", e.Kind, e.Name)
	if e.Key != "" {
		what += fmt.Sprintf(" with correlation key %q", e.Key)
	}
	return fmt.Sprintf("task %s does not wait for %s; it waits for: %s", e.Task, what, describeWaits(e.Waits))
}

// Is makes the error ErrNoWaiter and sdk.ErrInvalid.
func (e *NoWaiterError) Is(target error) bool {
	return target == ErrNoWaiter || target == sdk.ErrInvalid
}

// attrTimers is the token attribute where a navigator puts the evaluated
// timer definitions of a token's events (BPMN timer expressions).
const attrTimers = "timers"

// attrCorrelations is the token attribute where a navigator puts the
// evaluated correlation keys of a token's message events (BPMN
// zeebe:subscription correlationKey); without one, a message correlates
// by task id.
const attrCorrelations = "correlations"

// waitKey identifies a wait across recomputations.
func waitKey(w store.Wait) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%d", w.Kind, w.Token, w.Node, w.Event, w.Attempt)
}

// syncWaits recomputes the events the tokens wait for, keeping the due
// time of every wait already known.
func (e *exec) syncWaits() {
	if len(e.st.Events) == 0 && len(e.st.Released) == 0 && len(e.st.Waiting) == 0 {
		quiet := true // the common case: nothing waits, nothing to allocate
		for _, t := range e.st.Nav.Tokens {
			if len(t.Triggers) > 0 || t.DelayMS > 0 {
				quiet = false
				break
			}
		}
		if quiet {
			return
		}
	}
	old := make(map[string]store.Wait, len(e.st.Events))
	for _, w := range e.st.Events {
		old[waitKey(w)] = w
	}
	var now time.Time
	clock := func() time.Time {
		if now.IsZero() {
			now = e.r.cfg.Clock()
		}
		return now
	}
	var out []store.Wait
	live := map[string]bool{}
	for _, t := range e.st.Nav.Tokens {
		live[t.ID] = true
		if t.Status == sdk.Ready && t.DelayMS > 0 {
			if a, ok := e.st.Released[t.ID]; !ok || a != t.Attempt {
				w := store.Wait{Kind: store.WaitRetry, Node: t.Node, Token: t.ID, Attempt: t.Attempt}
				if o, ok := old[waitKey(w)]; ok {
					w = o
				} else {
					w.Due = clock().Add(time.Duration(t.DelayMS) * time.Millisecond)
				}
				out = append(out, w)
			}
		}
		if t.Status == sdk.Scope && len(t.Triggers) == 0 {
			continue
		}
		for _, ev := range t.Triggers {
			w := e.eventWait(t, ev)
			if o, ok := old[waitKey(w)]; ok {
				out = append(out, o)
				continue
			}
			if w.Kind == store.WaitTimer && w.Error == "" {
				def := e.timerDef(t, ev)
				due, err := e.r.timerDue(def, clock())
				if err != nil {
					w.Error = err.Error()
				}
				w.Due = due
			}
			out = append(out, w)
		}
	}
	for id := range e.st.Released {
		if !live[id] {
			delete(e.st.Released, id)
		}
	}
	for id := range e.st.Waiting {
		if !live[id] {
			delete(e.st.Waiting, id)
		}
	}
	e.st.Events = out
}

// eventWait describes what token t waits for when event ev fires.
func (e *exec) eventWait(t sdk.Token, ev string) store.Wait {
	w := store.Wait{Kind: store.WaitEvent, Node: t.Node, Event: ev, Token: t.ID}
	def := e.r.nodes[ev].Event
	if def == nil {
		return w
	}
	switch def.Type {
	case sdk.EventTimer:
		w.Kind = store.WaitTimer
		if e.timerDef(t, ev) == "" {
			w.Error = "no timer definition"
		}
	case sdk.EventMessage:
		w.Kind, w.Name, w.Correlation = store.WaitMessage, def.Name, e.task.ID
		if w.Name == "" {
			w.Name = ev
		}
		// The navigator's evaluated correlation key (zeebe:subscription),
		// or why it has none.
		if m, ok := t.Attrs[attrCorrelations].(map[string]any); ok {
			switch k := m[ev].(type) {
			case string:
				w.Correlation = k
			case map[string]any:
				w.Correlation = ""
				w.Error = fmt.Sprint(k["error"])
			}
		}
	case sdk.EventSignal:
		w.Kind, w.Name = store.WaitSignal, def.Name
		if w.Name == "" {
			w.Name = ev
		}
	}
	return w
}

// timerDef is the timer definition of event ev for token t: the
// navigator's evaluated one when it gave it, else the routine's.
func (e *exec) timerDef(t sdk.Token, ev string) string {
	if m, ok := t.Attrs[attrTimers].(map[string]any); ok {
		if s, ok := m[ev].(string); ok {
			return s
		}
	}
	if m, ok := t.Attrs[attrTimers].(map[string]string); ok {
		if s, ok := m[ev]; ok {
			return s
		}
	}
	if d := e.r.nodes[ev].Event; d != nil {
		return d.Timer
	}
	return ""
}

// token finds the run's token id.
func (e *exec) token(id string) (sdk.Token, bool) {
	for _, t := range e.st.Nav.Tokens {
		if t.ID == id {
			return t, true
		}
	}
	return sdk.Token{}, false
}

// replaying reports whether the run serves answers from recordings.
func (e *exec) replaying() bool { return e.r.cfg.Answer != nil }

// fireDue fires the first timer that is due and releases every retry that
// is; it reports whether anything moved. In replay a timer fires when the
// recording says it fired, and retries run at once: no real waiting.
func (e *exec) fireDue(ctx context.Context) (bool, error) {
	if len(e.st.Events) == 0 {
		return false, nil
	}
	now := e.r.cfg.Clock()
	released := false
	for _, w := range e.st.Events {
		switch w.Kind {
		case store.WaitRetry:
			if e.replaying() || !w.Due.After(now) {
				if e.st.Released == nil {
					e.st.Released = map[string]int{}
				}
				e.st.Released[w.Token] = w.Attempt
				released = true
			}
		}
	}
	if released {
		e.syncWaits()
		return true, nil
	}
	for _, w := range e.st.Events {
		if w.Kind == store.WaitRetry || w.Fired {
			continue
		}
		_, done := e.st.Done[w.Token]
		mid := done || e.flying(w.Token)
		if e.replaying() {
			// An event recorded while its step ran: a non-interrupting
			// one fires once the step has finished, before its outcome is
			// handed over (fireOnDone); an interrupting one cancelled the
			// step, so it fires before the step would start.
			if mid {
				continue
			}
			for _, name := range e.replayNames(w.Event) {
				n := e.st.Answers[name] + 1
				if payload, ok := e.r.cfg.Answer(ctx, e.task.ID, name, n); ok {
					return true, e.fireAs(ctx, w, payload, name)
				}
			}
			continue
		}
		if done {
			continue // the step finished first; fireOnDone decides
		}
		if w.Kind == store.WaitTimer && !w.Due.IsZero() && w.Error == "" && !w.Due.After(now) {
			return true, e.fire(ctx, w, nil)
		}
		if w.Kind == store.WaitEvent && e.holds(w.Event, now) {
			return true, e.fire(ctx, w, nil)
		}
	}
	return false, nil
}

// replayNames are the recording names a replay looks for the deliveries
// at event ev under, when its token's step is not running: the plain
// one, and for an interrupting event also the mid-step one (the event
// cancelled the step there, so the replay fires it before the step).
func (e *exec) replayNames(ev string) []string {
	if e.interrupting(ev) {
		return []string{eventStep(ev), midStepEvent(ev)}
	}
	return []string{eventStep(ev)}
}

// interrupting reports whether event ev cancels the activity it is
// attached to.
func (e *exec) interrupting(ev string) bool {
	d := e.r.nodes[ev].Event
	return d != nil && d.Interrupting
}

// holds evaluates the condition of conditional event ev over the run's
// variables, as the routine's navigator reads it (sdk.EventSemantics). It
// runs whenever the variables may have changed: on the token's arrival
// and after every step and delivery. A condition that fails to evaluate
// does not hold.
func (e *exec) holds(ev string, now time.Time) bool {
	x := e.r.conditions[ev]
	if x == nil {
		return false
	}
	env := e.st.Nav.Env
	env.Now = now
	ok, err := x(env)
	return err == nil && ok
}

// eventStep is the recording name of the events fired at event node ev.
func eventStep(ev string) string { return "event " + ev }

// midStepEvent is the recording name of the events fired at event node ev
// while its token's step ran (or had finished, its outcome not yet handed
// over): a replay fires them at the same point of the step.
func midStepEvent(ev string) string { return "event " + ev + " mid-step" }

// fire delivers event w to its token through Navigator.Boundary, records
// the delivery (so that a replay delivers it again) and checkpoints.
func (e *exec) fire(ctx context.Context, w store.Wait, vars map[string]any) error {
	name := eventStep(w.Event)
	if _, done := e.st.Done[w.Token]; done || e.flying(w.Token) {
		name = midStepEvent(w.Event)
	}
	return e.fireAs(ctx, w, vars, name)
}

// fireAs fires w, its delivery recorded under name.
func (e *exec) fireAs(ctx context.Context, w store.Wait, vars map[string]any, name string) error {
	if len(vars) > 0 {
		next := make(map[string]any, len(e.st.Nav.Env.Vars)+len(vars))
		for k, v := range e.st.Nav.Env.Vars {
			next[k] = v
		}
		for k, v := range vars {
			next[k] = v
		}
		e.st.Nav.Env.Vars = next
	}
	e.st.answered(name, 1)
	if !e.replaying() {
		if err := e.putAnswer(ctx, name, e.st.Answers[name], w.String(), orEmpty(vars)); err != nil {
			return err
		}
	}
	d, err := e.r.cfg.Navigator.Boundary(ctx, &sdk.BoundaryRequest{State: e.navState(), Token: w.Token, Event: w.Event, Payload: vars})
	if err != nil {
		return fmt.Errorf("navigator at event %q: %w", w.Event, err)
	}
	if err := e.apply(ctx, navCall{"boundary at", w.Event}, d); err != nil {
		return err
	}
	// A token that still waits for the event (a non-interrupting boundary
	// event) keeps it as fired: it does not fire again — but a cycle timer
	// waits for its next repetition, due one interval after this one.
	for i := range e.st.Events {
		cur := &e.st.Events[i]
		if waitKey(*cur) != waitKey(w) {
			continue
		}
		cur.Fires++
		next, ok := time.Time{}, false
		if t, found := e.token(cur.Token); found && cur.Kind == store.WaitTimer {
			next, ok = e.r.cycleNext(e.timerDef(t, cur.Event), cur.Due, cur.Fires)
		}
		if ok {
			cur.Due = next
		} else {
			cur.Fired = true
		}
	}
	e.syncWaits()
	failpoint.Hit(failpoint.EventFired)
	return e.checkpoint(ctx)
}

// waits lists everything the run waits for: questions to people first,
// then events, in token order.
func (e *exec) waits() []store.Wait {
	var out []store.Wait
	var ids []string
	for id := range e.st.Waiting {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		node := e.tokenNode(id)
		out = append(out, store.Wait{Kind: store.WaitHuman, Node: node, Token: id, Question: e.st.Waiting[id], Options: e.options(node)})
	}
	for _, w := range e.st.Events {
		if !w.Fired {
			out = append(out, w)
		}
	}
	return out
}

// options are the answers the human step at node allows (none: any).
func (e *exec) options(node string) []string {
	if e.r.cfg.Pipeline == nil {
		return nil
	}
	return slices.Clone(e.r.cfg.Pipeline.Steps[node].Options)
}

// nextDue is the earliest due time of a timer or retry, or zero.
func (e *exec) nextDue() time.Time {
	var next time.Time
	for _, w := range e.st.Events {
		if w.Due.IsZero() || w.Error != "" || w.Fired {
			continue
		}
		if next.IsZero() || w.Due.Before(next) {
			next = w.Due
		}
	}
	return next
}

// match finds the waits a delivery is for: the first waiting message
// subscription of that name (or event id), or every waiting signal
// subscription of that name.
func (e *exec) match(d Delivery) []store.Wait {
	var out []store.Wait
	for _, w := range e.st.Events {
		if w.Fired {
			continue
		}
		switch {
		case d.Kind == store.WaitMessage && d.Key != "" && (w.Kind != store.WaitMessage || w.Correlation != d.Key):
			continue
		case d.Kind == store.WaitMessage && w.Kind == store.WaitMessage && w.Error != "" && (d.Key != "" || w.Event != d.Name):
			continue // no key to correlate by: only its event id delivers it
		case d.Kind == store.WaitMessage && (w.Kind == store.WaitMessage && (w.Name == d.Name || w.Event == d.Name) ||
			w.Kind == store.WaitEvent && w.Event == d.Name ||
			// A timer that cannot be scheduled fires only when named.
			w.Kind == store.WaitTimer && w.Error != "" && w.Event == d.Name):
			return []store.Wait{w}
		case d.Kind == store.WaitSignal && w.Kind == store.WaitSignal && w.Name == d.Name:
			out = append(out, w)
		}
	}
	return out
}

// describeWaits says what a run waits for, for an error message.
func describeWaits(ws []store.Wait) string {
	if len(ws) == 0 {
		return "nothing"
	}
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.String()
	}
	return strings.Join(parts, "; ")
}

// deliver fires a delivery at the waits it matches, token by token
// (a signal's second subscriber may be gone once the first has moved).
func (e *exec) deliver(ctx context.Context, d Delivery) (int, error) {
	targets := e.match(d)
	n := 0
	for _, w := range targets {
		still := false
		for _, cur := range e.st.Events {
			still = still || waitKey(cur) == waitKey(w)
		}
		if !still {
			continue
		}
		if err := e.fire(ctx, w, d.Vars); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// waitsForEvents reports whether a token waits for an event still to come.
func (e *exec) waitsForEvents() bool {
	for _, w := range e.st.Events {
		if !w.Fired {
			return true
		}
	}
	return false
}

// Broadcast delivers the signal name, with vars, to every waiting task
// (of the pipeline named pipe, when not ""; never the task skip, whose
// run the caller delivers to itself) that waits for it, oldest first, and
// returns the results in that order. runner gives the runner for a task's
// pipeline file (the caller may cache prepared pipelines). None waiting
// is not an error: a BPMN signal nobody catches is lost.
func Broadcast(ctx context.Context, s *store.Store, pipe, skip, name string, vars map[string]any,
	runner func(ctx context.Context, pipelineFile string) (*Runner, error)) ([]*Result, error) {
	tasks, err := s.Tasks(ctx, store.Query{Pipeline: pipe, Status: store.StatusWaiting})
	if err != nil {
		return nil, err
	}
	var results []*Result
	for i := len(tasks) - 1; i >= 0; i-- { // oldest first: the order tasks started in
		t := tasks[i]
		if t.ID == skip || !waitsForSignal(t.Waits, name) {
			continue
		}
		file, err := PipelineOf(ctx, s, t.ID)
		if err != nil {
			return results, err
		}
		r, err := runner(ctx, file)
		if err != nil {
			return results, fmt.Errorf("task %s: %w", t.ID, err)
		}
		res, err := r.Deliver(ctx, t.ID, Delivery{Kind: store.WaitSignal, Name: name, Vars: vars})
		if err != nil {
			return results, fmt.Errorf("task %s: %w", t.ID, err)
		}
		results = append(results, res)
	}
	return results, nil
}

// Correlate finds the task a keyed message d is for, as Zeebe correlates:
// the task prefer when it waits with a subscription of d's name (or event
// id) and key, else the oldest waiting task that does. None is a
// *NoSubscriberError (sdk.ErrInvalid).
func Correlate(ctx context.Context, s *store.Store, d Delivery, prefer string) (string, error) {
	if prefer != "" {
		if t, err := s.Task(ctx, prefer); err == nil && t.Status == store.StatusWaiting && subscribes(t.Waits, d) {
			return prefer, nil
		}
	}
	tasks, err := s.Tasks(ctx, store.Query{Status: store.StatusWaiting})
	if err != nil {
		return "", err
	}
	for i := len(tasks) - 1; i >= 0; i-- {
		if subscribes(tasks[i].Waits, d) {
			return tasks[i].ID, nil
		}
	}
	return "", &NoSubscriberError{Name: d.Name, Key: d.Key}
}

// subscribes reports whether one of ws is a subscription to message d.
func subscribes(ws []store.Wait, d Delivery) bool {
	for _, w := range ws {
		if w.Kind == store.WaitMessage && (w.Name == d.Name || w.Event == d.Name) && w.Correlation == d.Key {
			return true
		}
	}
	return false
}

// NoSubscriberError is a keyed message no waiting task subscribes to.
type NoSubscriberError struct{ Name, Key string }

func (e *NoSubscriberError) Error() string {
	return fmt.Sprintf("no waiting task has a subscription to message %q with correlation key %q", e.Name, e.Key)
}

// Is makes the error sdk.ErrInvalid (exit 2).
func (e *NoSubscriberError) Is(target error) bool { return target == sdk.ErrInvalid }

func waitsForSignal(ws []store.Wait, name string) bool {
	for _, w := range ws {
		if w.Kind == store.WaitSignal && w.Name == name {
			return true
		}
	}
	return false
}
