package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Stepwise execution: an outside scheduler (a Temporal workflow, see
// host/temporal) owns the run's state between calls and decides where each
// call runs. Begin and Advance apply navigator decisions and say which
// steps run next; RunStep runs one of them. The state travels as a
// Snapshot, so every call can run in another process. The calls are the
// Runner's own code (the same step, handOver, fire and syncWaits as a local
// run), so a run driven stepwise records the same spans, recordings and
// result as a local one.

// Recorder is where a stepwise run reads and writes recordings: provider
// calls are answered from it before any provider is asked, and each new
// answer is written to it before the step goes on, so a step run again
// (another worker retrying it after a crash) is never billed twice.
type Recorder interface {
	Recording(ctx context.Context, key string) (*store.Recording, error)
	PutRecording(ctx context.Context, r *store.Recording) error
	Redactor() *store.Redactor
}

// Snapshot is an execution between two stepwise calls.
type Snapshot struct {
	Task      store.Task      `json:"task"`
	Execution store.Execution `json:"execution"`
	// State is the run state (a checkpoint's), without the strategy.
	State json.RawMessage `json:"state"`
	// Deadline is when limits.timeout ends the run (zero: no timeout).
	// It is set when the run starts and each time it wakes from a wait.
	Deadline time.Time `json:"deadline,omitzero"`
}

// Progress is what a Begin or Advance call left.
type Progress struct {
	Snapshot Snapshot `json:"snapshot"`
	// Spans are the spans the call finished, numbered, to be recorded.
	Spans []store.Span `json:"spans,omitempty"`
	// Batch lists the steps to run now (RunStep each, then Advance with
	// their outcomes in this order). Empty when Result is set.
	Batch []sdk.Token `json:"batch,omitempty"`
	// Result is set when the run ended or waits.
	Result *Result `json:"result,omitempty"`
	// NextDue is when the earliest timer or retry of a waiting run falls
	// due (zero: none).
	NextDue time.Time `json:"next_due,omitzero"`
}

// Ended reports whether the run completed, failed or was cancelled.
func (p *Progress) Ended() bool {
	return p.Result != nil && p.Result.Status.Ended()
}

// StepOutcome is what RunStep gives back for one token.
type StepOutcome struct {
	Token string `json:"token"`
	// Done is the finished step's result (nil when it waits, was
	// interrupted or failed the run).
	Done *StepDone `json:"done,omitempty"`
	// Wait is the question the step waits on a person for.
	Wait string `json:"wait,omitempty"`
	// Interrupted is the interrupting timer that cancelled the step.
	Interrupted *store.Wait `json:"interrupted,omitempty"`
	// Fatal is the error that ends the run, with the spans the step left.
	Fatal      string       `json:"fatal,omitempty"`
	FatalSpans []store.Span `json:"fatal_spans,omitempty"`
	// What the step changed in the run's state.
	Violations    int            `json:"violations,omitempty"`
	Confirmations int            `json:"confirmations,omitempty"`
	Approved      bool           `json:"approved,omitempty"`
	Answers       map[string]int `json:"answers,omitempty"`
	Actions       []ActionRecord `json:"actions,omitempty"`
}

// StepDone is a finished step's result, opaque to schedulers.
type StepDone = stepResult

// ActionRecord is what an action step decided and why.
type ActionRecord = actionRecord

// Stepper runs a pipeline stepwise. It is safe for concurrent use.
type Stepper struct {
	cfg      Config
	rec      Recorder
	compiled *Compiled
	// base is the runner every call's derives from (derive), made once.
	baseOnce sync.Once
	base     *Runner
}

// NewStepper returns a stepper for the prepared pipeline: cfg gives the
// logger and hooks (its Store and Journal are not used), rec the
// recordings. The pipeline's tool sources are the prepared ones: each
// starts on a worker's first call that uses it, and the tool calls'
// started markers, results and tool lists go to rec, so a call retried on
// another worker is answered from its recording as in a resumed local run.
func (p *Prepared) NewStepper(cfg Config, rec Recorder) *Stepper {
	cfg.Pipeline, cfg.Navigator, cfg.Routine, cfg.Strategy, cfg.Providers, cfg.Prices, cfg.Tools =
		p.Pipeline, p.Navigator, p.Routine, p.Strategy, p.Providers, p.Prices, p.Tools
	if cfg.Compiled == nil {
		cfg.Compiled = &Compiled{}
	}
	cfg.Store, cfg.Sleep, cfg.Inbox, cfg.Answer = nil, nil, nil, nil
	return &Stepper{cfg: cfg, rec: rec, compiled: cfg.Compiled}
}

// StrategyHash is the hash of the strategy the stepper runs under.
func (s *Stepper) StrategyHash() string { return s.baseRunner().ref.Hash }

// baseRunner is the runner the calls' runners derive from.
func (s *Stepper) baseRunner() *Runner {
	s.baseOnce.Do(func() { s.base = NewRunner(s.cfg) })
	return s.base
}

// derive is a runner like r under cfg (a call's journal and clock): the
// routine's tables, the strategy's hash and the compiled caches are r's,
// read-only once made, so a stepwise call does not make them again.
func (r *Runner) derive(cfg Config) *Runner {
	if cfg.Logger == nil {
		cfg.Logger = r.cfg.Logger
	}
	return &Runner{cfg: cfg, nodes: r.nodes, stepNames: r.stepNames, runName: r.runName, stepAttrs: r.stepAttrs, ref: r.ref,
		stateless: r.stateless, rules: r.rules, compiled: r.compiled, decisions: r.decisions, events: r.events,
		conditions: r.conditions, outputBlind: r.outputBlind, textPiece: r.textPiece, copyVars: r.copyVars}
}

// RecorderError marks a failure to read or write a recording: the step
// did not fail, the place its evidence goes did; a scheduler retries it.
type RecorderError struct{ Err error }

func (e *RecorderError) Error() string { return "recordings: " + e.Err.Error() }
func (e *RecorderError) Unwrap() error { return e.Err }

// runner makes a runner over a fresh memory journal for one call; floor
// bounds its clock from below (a timer a scheduler fired is due by it).
func (s *Stepper) runner(j *memJournal, floor time.Time) *Runner {
	cfg := s.cfg
	clock := cfg.Clock
	if clock == nil {
		clock = time.Now
	}
	cfg.Clock = func() time.Time {
		t := clock()
		if t.Before(floor) {
			return floor
		}
		return t
	}
	j.clock = cfg.Clock
	cfg.Journal = j
	return s.baseRunner().derive(cfg)
}

// Begin starts a task stepwise: in.ID and in.Execution must be set (the
// scheduler names them). now is the scheduler's clock.
func (s *Stepper) Begin(ctx context.Context, in Input, now time.Time) (*Progress, error) {
	if in.ID == "" || in.Execution == "" {
		return nil, errors.New("stepwise begin: task and execution ids are required")
	}
	j := &memJournal{rec: s.rec}
	r := s.runner(j, now)
	input, err := json.Marshal(orEmpty(in.Input))
	if err != nil {
		return nil, fmt.Errorf("encode input: %w", err)
	}
	task := &store.Task{ID: in.ID, Pipeline: r.cfg.Pipeline.Name, Input: input, Truth: in.Truth, Tags: in.Tags,
		Status: store.StatusRunning, Created: r.cfg.Clock().UTC(), Strategy: r.ref, Start: in.Start}
	e := &exec{r: r, task: task, id: in.Execution, st: &runState{Done: map[string]*stepResult{}, Waiting: map[string]string{},
		Answers: map[string]int{}, Started: r.cfg.Clock()}}
	e.traceID = store.TraceIDFor(task.ID, e.id)
	j.task = *task
	j.exec = store.Execution{Task: task.ID, ID: e.id, Strategy: r.ref, Mode: "live", Status: store.StatusRunning,
		TraceID: e.traceID, Started: e.st.Started}
	if abs, err := r.pipelineAbs(); err == nil {
		e.st.Pipeline = abs
	}
	e.st.Nav = sdk.State{Routine: r.cfg.Routine.Hash, Env: sdk.Env{Input: orEmpty(in.Input), Vars: map[string]any{}, Strategy: r.compiled.strategyEnv(r.cfg.Strategy)}}
	e.st.SpanSeq = 1
	var deadline time.Time
	if lim := r.cfg.Pipeline.Limits; lim.Timeout > 0 {
		deadline = r.cfg.Clock().Add(lim.Timeout.Std())
	}
	d, err := r.cfg.Navigator.Start(ctx, &sdk.StartRequest{State: e.navState(), Trigger: in.Start})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return e.stepwiseEnd(ctx, j, deadline, fmt.Errorf("start: %w", err))
	}
	if err := e.apply(ctx, navCall{what: "start"}, d); err != nil {
		return e.stepwiseEnd(ctx, j, deadline, err)
	}
	return e.advance(ctx, j, deadline)
}

// load rebuilds an execution from a snapshot over a fresh memory journal.
func (s *Stepper) load(snap Snapshot, floor time.Time) (*exec, *memJournal, error) {
	j := &memJournal{rec: s.rec, task: snap.Task, exec: snap.Execution}
	r := s.runner(j, floor)
	if h := r.ref.Hash; snap.Task.Strategy.Hash != "" && snap.Task.Strategy.Hash != h {
		return nil, nil, sdk.Errorf(sdk.CodeInvalid, "task %s runs under strategy %s %s (%s…); this worker has %s (%s…)",
			snap.Task.ID, snap.Task.Strategy.Name, snap.Task.Strategy.Version, short(snap.Task.Strategy.Hash), r.cfg.Strategy.Metadata.Version, short(h))
	}
	st, err := decodeStateOf(snap.State, &snap.Task)
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: read run state: %w", snap.Task.ID, err)
	}
	st.Nav.Env.Strategy = r.compiled.strategyEnv(r.cfg.Strategy)
	task := snap.Task
	return &exec{r: r, task: &task, id: snap.Execution.ID, traceID: snap.Execution.TraceID, st: st}, j, nil
}

// Advance continues a run: it takes the outcomes of the last batch (in
// batch order), or else a delivery or a person's answers (for the waiting
// steps, which the next batch then runs: give RunStep the same answers),
// fires the timers due by now and the scheduler's clock, and runs the
// navigator until steps are ready, the run waits, or it ends.
func (s *Stepper) Advance(ctx context.Context, snap Snapshot, outcomes []StepOutcome, delivery *Delivery, answers map[string]any, now time.Time) (*Progress, error) {
	e, j, err := s.load(snap, now)
	if err != nil {
		return nil, err
	}
	deadline := snap.Deadline
	if len(outcomes) == 0 {
		// A wake-up (a timer, a delivery, an answer): time spent waiting
		// is not run time.
		deadline = time.Time{}
		if lim := e.r.cfg.Pipeline.Limits; lim.Timeout > 0 {
			deadline = e.r.cfg.Clock().Add(lim.Timeout.Std())
		}
		if len(answers) > 0 && len(e.st.Waiting) == 0 {
			return nil, sdk.Errorf(sdk.CodeInvalid, "task %s is not waiting for an answer; drop --set", snap.Task.ID)
		}
		e.answers = answers
		if delivery != nil {
			e.syncWaits()
			if len(e.match(*delivery)) == 0 {
				return nil, &NoWaiterError{Task: snap.Task.ID, Kind: delivery.Kind, Name: delivery.Name, Key: delivery.Key, Waits: e.waits()}
			}
			e.delivery = delivery
		}
		return e.advance(ctx, j, deadline)
	}
	return e.afterBatch(ctx, j, deadline, outcomes)
}

// afterBatch applies a batch's outcomes (in batch order), as runBatch
// does once its steps finished, and advances.
func (e *exec) afterBatch(ctx context.Context, j *memJournal, deadline time.Time, outcomes []StepOutcome) (*Progress, error) {
	var interrupted []store.Wait
	batch := make([]sdk.Token, 0, len(outcomes))
	for _, o := range outcomes {
		if t, ok := e.token(o.Token); ok {
			batch = append(batch, t)
		}
		e.st.Violations += o.Violations
		e.st.Confirmations += o.Confirmations
		e.st.Approved = e.st.Approved || o.Approved
		for n, k := range o.Answers {
			e.st.answered(n, k)
		}
		e.st.Actions = append(e.st.Actions, o.Actions...)
	}
	for _, o := range outcomes {
		if o.Fatal != "" {
			if len(o.FatalSpans) > 0 {
				if err := e.checkpoint(ctx, e.number(o.FatalSpans)...); err != nil {
					return nil, err
				}
			}
			return e.stepwiseEnd(ctx, j, deadline, errors.New(o.Fatal))
		}
	}
	for _, o := range outcomes {
		switch {
		case o.Wait != "":
			e.st.wait(o.Token, o.Wait)
		case o.Interrupted != nil:
			interrupted = append(interrupted, *o.Interrupted)
		case o.Done != nil:
			e.st.Done[o.Token] = o.Done
			delete(e.st.Waiting, o.Token)
		}
	}
	e.answers = nil // consumed by the batch that saw them
	sort.Slice(interrupted, func(i, k int) bool { return interrupted[i].Token < interrupted[k].Token })
	for _, w := range interrupted {
		if err := e.fire(ctx, w, nil); err != nil {
			return e.stepwiseEnd(ctx, j, deadline, err)
		}
	}
	if err := e.fireNonInterrupting(ctx, batch); err != nil {
		return e.stepwiseEnd(ctx, j, deadline, err)
	}
	return e.advance(ctx, j, deadline)
}

// pure reports whether every step of the batch is a pure function of the
// run's state (an expr step, or a node without a step): Advance runs such
// a batch itself instead of handing it to the scheduler, as its result is
// recorded with Advance's.
func (e *exec) pure(batch []sdk.Token) bool {
	for _, t := range batch {
		spec, ok := e.r.cfg.Pipeline.Steps[t.Node]
		if ok && spec.Kind != pipeline.KindExpr {
			return false
		}
	}
	return true
}

// maxInline bounds the pure batches one call runs itself: a routine that
// loops on expressions still yields to its scheduler now and then.
const maxInline = 64

// runInline runs a pure batch here, in batch order.
func (e *exec) runInline(ctx context.Context, j *memJournal, deadline time.Time, batch []sdk.Token) (*Progress, error) {
	outcomes := make([]StepOutcome, 0, len(batch))
	for _, t := range batch {
		res, wait, err := e.step(ctx, t, e.stepIn())
		o := StepOutcome{Token: t.ID}
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, err
		case err != nil:
			o.Fatal = err.Error()
		case wait != "":
			o.Wait = wait
		default:
			o.Done = res
		}
		outcomes = append(outcomes, o)
	}
	return e.afterBatch(ctx, j, deadline, outcomes)
}

// advance is drive without running steps: it stops at the next batch.
func (e *exec) advance(ctx context.Context, j *memJournal, deadline time.Time) (*Progress, error) {
	lim := e.r.cfg.Pipeline.Limits
	for {
		if err := e.handOver(ctx); err != nil {
			return e.stepwiseEnd(ctx, j, deadline, err)
		}
		if e.completed() {
			return e.stepwiseEnd(ctx, j, deadline, nil)
		}
		if !deadline.IsZero() && e.r.cfg.Clock().After(deadline) {
			return e.stepwiseEnd(ctx, j, deadline, fmt.Errorf("%w: timeout %s", ErrLimit, lim.Timeout.Std()))
		}
		e.syncWaits()
		if d := e.delivery; d != nil {
			e.delivery = nil
			if _, err := e.deliver(ctx, *d); err != nil {
				return e.stepwiseEnd(ctx, j, deadline, err)
			}
			continue
		}
		if fired, err := e.fireDue(ctx); err != nil {
			return e.stepwiseEnd(ctx, j, deadline, err)
		} else if fired {
			continue
		}
		batch := e.ready()
		if len(batch) == 0 {
			if len(e.st.Waiting) > 0 || e.waitsForEvents() {
				if err := e.checkpoint(ctx); err != nil {
					return nil, err
				}
				if err := e.setStatus(ctx, store.StatusWaiting, ""); err != nil {
					return nil, err
				}
				p, err := e.progress(j, deadline)
				if err != nil {
					return nil, err
				}
				p.Result = e.result(store.StatusWaiting, "")
				p.NextDue = e.nextDue()
				return p, nil
			}
			return e.stepwiseEnd(ctx, j, deadline, fmt.Errorf("routine stopped with no step to run and nothing to wait for (tokens: %s)", e.tokenSummary()))
		}
		if lim.MaxSteps > 0 && e.st.Steps+len(batch) > lim.MaxSteps {
			return e.stepwiseEnd(ctx, j, deadline, fmt.Errorf("%w: max_steps %d (the next batch would run step %d)", ErrLimit, lim.MaxSteps, e.st.Steps+len(batch)))
		}
		if j.inlined < maxInline && e.pure(batch) {
			j.inlined++
			return e.runInline(ctx, j, deadline, batch)
		}
		if err := e.checkpoint(ctx); err != nil {
			return nil, err
		}
		p, err := e.progress(j, deadline)
		if err != nil {
			return nil, err
		}
		p.Batch = batch
		return p, nil
	}
}

// stepwiseEnd finishes the run (completed when err is nil) or, when err is
// a cancelled context, returns it for the scheduler to retry the call.
func (e *exec) stepwiseEnd(ctx context.Context, j *memJournal, deadline time.Time, runErr error) (*Progress, error) {
	if ctx.Err() != nil && runErr != nil {
		return nil, runErr
	}
	var rerr *RecorderError
	if errors.As(runErr, &rerr) {
		return nil, runErr
	}
	// The state is encoded after finish (progress): the result's output
	// must be a copy, not the run's own vars map with "action" set in it
	// (resultLast), which would put "action" into the recorded state.
	e.ownVars = nil
	res, err := e.finish(ctx, runErr)
	if err != nil {
		return nil, err
	}
	p, err := e.progress(j, deadline)
	if err != nil {
		return nil, err
	}
	p.Result = res
	return p, nil
}

// progress is the snapshot of the execution now, with the spans written.
func (e *exec) progress(j *memJournal, deadline time.Time) (*Progress, error) {
	c, err := e.checkpointRecord()
	if err != nil {
		return nil, err
	}
	j.task.Status = j.taskStatus()
	return &Progress{Snapshot: Snapshot{Task: j.task, Execution: j.exec, State: c.State, Deadline: deadline}, Spans: j.spans}, nil
}

// RunStep runs the step at token of the snapshot's run, with the answers
// the Advance that listed it was given. An error means the step did not
// run to an outcome (cancelled, or its recordings unreachable): run it
// again. A step that ends the run reports it in StepOutcome.Fatal.
func (s *Stepper) RunStep(ctx context.Context, snap Snapshot, token string, answers map[string]any) (*StepOutcome, error) {
	e, j, err := s.load(snap, time.Time{})
	if err != nil {
		return nil, err
	}
	t, ok := e.token(token)
	if !ok {
		return nil, sdk.Errorf(sdk.CodeInvalid, "task %s has no token %q", snap.Task.ID, token)
	}
	e.answers = answers
	before := *e.st
	answersBefore := make(map[string]int, len(e.st.Answers))
	for k, v := range e.st.Answers {
		answersBefore[k] = v
	}
	actionsBefore := len(e.st.Actions)
	parent := ctx
	if !snap.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, snap.Deadline)
		defer cancel()
	}
	stepCtx, timer, cancel := e.stepContext(ctx, t)
	defer cancel()
	res, wait, err := e.step(stepCtx, t, e.stepIn())
	if err != nil && timer != nil && ctx.Err() == nil && stepCtx.Err() == nil && timer.Due.Sub(e.r.cfg.Clock()) < 100*time.Millisecond {
		// A call whose own deadline is the timer's (a plugin's context
		// timer) can fail a hair before the step's context ends: the
		// failure is the timer's, so let it end.
		<-stepCtx.Done()
	}
	out := &StepOutcome{Token: token}
	switch {
	case err != nil && timer != nil && ctx.Err() == nil && errors.Is(stepCtx.Err(), context.DeadlineExceeded):
		out.Interrupted = timer
		return out, nil // the step leaves nothing; the timer takes over
	case err != nil && parent.Err() != nil:
		return nil, err
	case err != nil:
		var rerr *RecorderError
		if errors.As(err, &rerr) {
			return nil, err
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: timeout %s", ErrLimit, e.r.cfg.Pipeline.Limits.Timeout.Std())
		}
		out.Fatal = err.Error()
		for _, sp := range j.spans {
			sp.Seq, sp.SpanID, sp.ParentSpanID = 0, "", ""
			out.FatalSpans = append(out.FatalSpans, sp)
		}
		return out, nil
	case wait != "":
		out.Wait = wait
	default:
		out.Done = res
	}
	out.Violations = e.st.Violations - before.Violations
	out.Confirmations = e.st.Confirmations - before.Confirmations
	out.Approved = e.st.Approved && !before.Approved
	for k, v := range e.st.Answers {
		if d := v - answersBefore[k]; d != 0 {
			if out.Answers == nil {
				out.Answers = map[string]int{}
			}
			out.Answers[k] = d
		}
	}
	out.Actions = append(out.Actions, e.st.Actions[actionsBefore:]...)
	return out, nil
}

// Matches reports whether a run waiting for waits (Result.Waits) takes the
// delivery: what a scheduler checks before it accepts one.
func Matches(waits []store.Wait, d Delivery) bool {
	var events []store.Wait
	for _, w := range waits {
		if w.Kind != store.WaitHuman {
			events = append(events, w)
		}
	}
	e := &exec{st: &runState{Events: events}}
	return len(e.match(d)) > 0
}

// memJournal is the journal of one stepwise call: the task, execution and
// spans stay in memory (the scheduler keeps them), recordings go to the
// Recorder at once.
type memJournal struct {
	rec   Recorder
	clock func() time.Time
	task  store.Task
	exec  store.Execution
	spans []store.Span
	// status is the task status the run set last ("" for none).
	status store.Status
	// inlined counts the pure batches this call ran itself.
	inlined int
}

var _ Journal = (*memJournal)(nil)

func (j *memJournal) taskStatus() store.Status {
	if j.status != "" {
		return j.status
	}
	return j.task.Status
}

func (j *memJournal) CreateTask(_ context.Context, t *store.Task) error { j.task = *t; return nil }
func (j *memJournal) CreateExecution(_ context.Context, e *store.Execution) error {
	j.exec = *e
	return nil
}
func (j *memJournal) Execution(_ context.Context, task, id string) (*store.Execution, error) {
	if task != j.task.ID || id != j.exec.ID {
		return nil, fmt.Errorf("execution %s/%s: %w", task, id, store.ErrNotFound)
	}
	e := j.exec
	return &e, nil
}
func (j *memJournal) PutExecution(_ context.Context, e *store.Execution) error {
	j.exec = *e
	return nil
}
func (j *memJournal) SetTaskStatus(_ context.Context, _ string, st store.Status) error {
	j.status = st
	return nil
}
func (j *memJournal) Checkpoint(_ context.Context, _ *store.Checkpoint, spans ...store.Span) error {
	j.spans = append(j.spans, spans...)
	return nil
}
func (j *memJournal) Recording(ctx context.Context, key string) (*store.Recording, error) {
	r, err := j.rec.Recording(ctx, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, &RecorderError{err}
	}
	return r, err
}
func (j *memJournal) PutRecording(ctx context.Context, r *store.Recording) error {
	if err := j.rec.PutRecording(ctx, r); err != nil {
		return &RecorderError{err}
	}
	return nil
}
func (j *memJournal) Redactor() *store.Redactor { return j.rec.Redactor() }
func (j *memJournal) NewID() string             { return "" }
func (j *memJournal) Now() time.Time            { return j.clock().UTC() }

// Stepwise runs have no driving goroutine to fire events on a running
// step (the scheduler runs each step elsewhere): as before mid-step
// firing, an interrupting timer bounds the step's context, and the
// non-interrupting ones that fell due while the batch ran fire after it.

// stepContext bounds a step by the earliest interrupting timer attached to
// its activity: when the timer is due first, the step's context ends and
// the timer fires instead (timer is then non-nil). The deadline is the
// wall-clock time left until the due time by the run's clock.
func (e *exec) stepContext(ctx context.Context, t sdk.Token) (context.Context, *store.Wait, context.CancelFunc) {
	var first *store.Wait
	e.mu.Lock()
	for i, w := range e.st.Events {
		if w.Token != t.ID || w.Kind != store.WaitTimer || w.Error != "" || w.Due.IsZero() || w.Fired || e.replaying() {
			continue
		}
		if d := e.r.nodes[w.Event].Event; d == nil || !d.Interrupting {
			continue
		}
		if first == nil || w.Due.Before(first.Due) {
			first = &e.st.Events[i]
		}
	}
	e.mu.Unlock()
	if first == nil {
		return ctx, nil, func() {}
	}
	w := *first
	c, cancel := context.WithTimeout(ctx, w.Due.Sub(e.r.cfg.Clock()))
	return c, &w, cancel
}

// fireNonInterrupting fires the non-interrupting timers of the batch's
// steps that fell due while they ran, before their outcomes are handed
// over: the timer's path starts, the activity completes as well.
func (e *exec) fireNonInterrupting(ctx context.Context, batch []sdk.Token) error {
	if e.replaying() {
		return nil
	}
	ran := make(map[string]bool, len(batch))
	for _, t := range batch {
		if _, ok := e.st.Done[t.ID]; ok {
			ran[t.ID] = true
		}
	}
	for {
		now := e.r.cfg.Clock()
		var due *store.Wait
		for i, w := range e.st.Events {
			if !ran[w.Token] || w.Kind != store.WaitTimer || w.Error != "" || w.Due.IsZero() || w.Fired || w.Due.After(now) {
				continue
			}
			if d := e.r.nodes[w.Event].Event; d == nil || d.Interrupting {
				continue
			}
			due = &e.st.Events[i]
			break
		}
		if due == nil {
			return nil
		}
		if err := e.fire(ctx, *due, nil); err != nil {
			return err
		}
	}
}
