package run

import (
	"context"
	"slices"
	"time"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Steps run in their own goroutines while the goroutine driving the run
// (drive) goes on: it fires the timers, messages and signals that come for
// a running step's token and runs the paths they start, concurrently with
// the step. What it keeps about them is a running, embedded in exec.
//
// Order. Navigator calls are made by the driving goroutine only, one at a
// time. The steps started together form a batch; a batch's outcomes are
// handed over together, in token order, once all its steps have finished
// and every batch started after it has been handed over (handOverBatches).
// So a path that an event starts while a step runs is handed over as far
// as it runs without waiting before the step's own outcome, however long
// either takes: the order depends on the events (which timers fired while
// which step ran), not on how fast the steps were. A non-interrupting
// timer that falls due while its step runs fires then; one that the clock
// passed while the step ran but that fired no earlier (a clock that
// jumps) fires once the step has finished, before its outcome is handed
// over (fireOnDone) — the same order. See RATIONALE.md, "Why steps run
// beside the run loop".
type running struct {
	// flights are the running steps.
	flights flightSet
	// begun is set by the run's first start.
	begun bool
	// queue holds started steps waiting for a slot (limits.parallel), in
	// start order.
	queue []queued
	// batches are the batches started and not yet handed over, oldest
	// first.
	batches []*batch
	// spare is a batch handed over, for the next start to reuse, and
	// tokens the array ready lists the next batch's tokens in: a run
	// of one step after another allocates neither anew for every step.
	spare   *batch
	tokens  []sdk.Token
	results chan landed
	slots   int
	// idle hands a step to one of the run's step goroutines that has
	// finished its last step and waits for another (stepper); quit ends
	// them when the run returns. A goroutine whose stack has grown to what
	// a step needs runs the run's next steps too, instead of a new one
	// growing its stack again for every step.
	idle chan func()
	quit chan struct{}
	// next is the run's only step when it was started and has not begun
	// to run: await runs it in the driving goroutine when nothing can come
	// while it runs, and hands it to a step goroutine otherwise (launch).
	// A second step starting hands it over at once. It points at
	// nextStep.
	next     *ready
	nextStep ready
	// frames are the step frames not yet taken (see newFrame).
	frames []stepFrame
}

// ready is a step started and not yet running: its token, its context
// and what it sees of the run.
type ready struct {
	t   sdk.Token
	ctx *lazyCtx
	in  stepIn
	// frame is the step's frame, which holds ctx.
	frame *stepFrame
}

// run runs the step, in the goroutine that calls it.
func (r ready) run(e *exec) landed {
	failpoint.Hit(failpoint.StepStart)
	res, wait, err := e.stepInFrame(r.ctx, r.t, r.in, r.frame)
	failpoint.Hit(failpoint.StepDone)
	return landed{t: r.t, res: res, wait: wait, err: err}
}

// batch is steps started together.
type batch struct {
	ids     []string // its tokens, in state order
	pending int      // steps not finished yet (running or queued)
}

// flightSet is the running steps, by token id, in start order: a few
// (limits.parallel at most), so a slice rather than a map, its first
// entry in Start's frame.
type flightSet []flightEntry

type flightEntry struct {
	id string
	f  flight
}

// get is token id's flight, if its step is running.
func (s flightSet) get(id string) (flight, bool) {
	for i := range s {
		if s[i].id == id {
			return s[i].f, true
		}
	}
	return flight{}, false
}

// put sets token id's flight.
func (s *flightSet) put(id string, f flight) {
	for i := range *s {
		if (*s)[i].id == id {
			(*s)[i].f = f
			return
		}
	}
	*s = append(*s, flightEntry{id: id, f: f})
}

// del removes token id's flight, if any.
func (s *flightSet) del(id string) {
	for i := range *s {
		if (*s)[i].id == id {
			n := copy((*s)[i:], (*s)[i+1:])
			(*s)[i+n] = flightEntry{}
			*s = (*s)[:i+n]
			return
		}
	}
}

// flight is a running step.
type flight struct {
	node  string
	batch *batch
	ctx   *lazyCtx
	// dropped is set when the step's token is gone (an interrupting event
	// took it): the step is cancelled and what it returns is dropped.
	dropped bool
}

type queued struct {
	t     sdk.Token
	batch *batch
	in    stepIn
}

// landed is what a step's goroutine returns.
type landed struct {
	t    sdk.Token
	res  *stepResult
	wait string
	err  error
}

// start starts a batch: its steps run as slots free up, each seeing the
// run as it is now.
func (e *exec) start(ctx context.Context, ts []sdk.Token) {
	if !e.begun {
		e.begun = true
		// The loader gives limits.parallel its declared default and
		// refuses values below 1; a hand-made pipeline without it runs
		// serially.
		e.slots = max(e.r.cfg.Pipeline.Limits.Parallel, 1)
		e.taskID = e.task.ID // before any step reads it
	}
	b := e.spare
	if b != nil {
		e.spare = nil
		*b = batch{ids: b.ids[:0], pending: len(ts)}
	} else {
		b = &batch{pending: len(ts)}
	}
	in := e.stepIn()
	for _, t := range ts {
		b.ids = append(b.ids, t.ID)
		e.queue = append(e.queue, queued{t: t, batch: b, in: in})
	}
	e.batches = append(e.batches, b)
	e.answers = nil // answers are consumed by the batch that saw them
	e.pump(ctx)
}

// pump starts queued steps while slots are free.
func (e *exec) pump(ctx context.Context) {
	for e.slots > 0 && len(e.queue) > 0 {
		q := e.queue[0]
		// Shifted down rather than resliced, so that the queue's array
		// serves the whole run.
		n := copy(e.queue, e.queue[1:])
		e.queue[n] = queued{}
		e.queue = e.queue[:n]
		e.slots--
		// The step's context lives in its frame, and the frame in the
		// run's array of them (newFrame).
		f := e.newFrame()
		f.ctx = lazyCtx{parent: ctx}
		sctx := &f.ctx
		e.flights.put(q.t.ID, flight{node: q.t.Node, batch: q.batch, ctx: sctx})
		r := ready{t: q.t, ctx: sctx, in: q.in, frame: f}
		if len(e.flights) == 1 {
			e.nextStep, e.next = r, &e.nextStep
			continue
		}
		e.launch()
		e.goStep(r)
	}
}

// framesPerBlock caps how many step frames newFrame allocates at once.
const framesPerBlock = 16

// newFrame is a new step frame, taken from the run's block of them: a
// run's steps take their frames from one allocation (the block is sized
// to the pipeline's steps, up to framesPerBlock) instead of one each.
// Each frame is taken once and never handed out again, so what holds a
// step's result (the run's state) holds its frame as if it had been
// allocated alone; a block lives while any of its frames is held. See
// RATIONALE.md, "Why step spans share attribute maps, frames, prompts and
// chain walks come from blocks, and plain JSON is decoded by hand".
func (e *exec) newFrame() *stepFrame {
	if len(e.frames) == 0 {
		e.frames = make([]stepFrame, min(max(len(e.r.cfg.Pipeline.Steps), 1), framesPerBlock))
	}
	f := &e.frames[0]
	e.frames = e.frames[1:]
	return f
}

// launch hands the step that has not begun to run (next) to a step
// goroutine.
func (e *exec) launch() {
	if e.next != nil {
		r := e.nextStep
		e.next, e.nextStep = nil, ready{}
		e.goStep(r)
	}
}

// goStep runs a step in a step goroutine, which sends what it returns to
// e.results.
func (e *exec) goStep(r ready) {
	run := func() { e.results <- r.run(e) }
	if e.quit == nil {
		// Made by the first step that runs in a step goroutine: a run
		// whose steps all run in the driving goroutine (await) needs
		// none. Only steps handed to a goroutine send to results, and
		// every receive waits for one of them (await, drain).
		if e.results == nil {
			e.results = make(chan landed)
		}
		e.idle, e.quit = make(chan func()), make(chan struct{})
	}
	select {
	case e.idle <- run: // a step goroutine that is free takes it
	default:
		go stepper(run, e.idle, e.quit)
	}
}

// stepper is a step goroutine: it runs a step, then the next one pump
// hands it while it waits, until the run returns (stopSteppers).
func stepper(run func(), idle <-chan func(), quit <-chan struct{}) {
	for {
		run()
		select {
		case run = <-idle:
		case <-quit:
			return
		}
	}
}

// stopSteppers ends the run's idle step goroutines; no step runs any more
// (drain waited for them).
func (e *exec) stopSteppers() {
	if e.quit != nil {
		close(e.quit)
		e.quit, e.idle = nil, nil
	}
}

// flying reports whether token id's step is running.
func (e *exec) flying(id string) bool {
	f, ok := e.flights.get(id)
	return ok && !f.dropped
}

// busy reports whether token id's step has started and not finished.
func (e *exec) busy(id string) bool {
	if _, ok := e.flights.get(id); ok {
		return true
	}
	for _, q := range e.queue {
		if q.t.ID == id {
			return true
		}
	}
	return false
}

// started counts the steps started and not handed over yet.
func (e *exec) started() int {
	return len(e.flights) + len(e.queue) + len(e.st.Done)
}

// await waits, without e.mu, until a step finishes, a timer on a running
// step's token is due, or (run --wait) a delivery comes, and takes it.
func (e *exec) await(ctx context.Context) error {
	var wake <-chan time.Time
	timer := e.stepTimer()
	if timer != nil {
		if until := e.r.cfg.Until; until != nil {
			wake = until(timer.Due)
		} else {
			wake = time.After(timer.Due.Sub(e.r.cfg.Clock()))
		}
	}
	var inbox <-chan Inbound
	if !e.replaying() {
		inbox = e.r.cfg.Inbox
	}
	if n := e.next; n != nil && wake == nil && inbox == nil && len(e.flights) == 1 {
		// The run's only step, and nothing can come while it runs (no
		// timer on it, no inbox): the wait is the step itself, so it runs
		// here rather than in a step goroutine this goroutine would wait
		// for. It runs without e.mu, as it would there (a step whose
		// token is gone meanwhile runs cancelled, and land drops it, as
		// there).
		r := *n
		e.next, e.nextStep = nil, ready{}
		e.mu.Unlock()
		l := r.run(e)
		e.mu.Lock()
		return e.land(ctx, l)
	}
	e.launch()
	e.mu.Unlock()
	var (
		l     landed
		in    Inbound
		which int
	)
	select {
	case l = <-e.results:
	case <-wake:
		which = 1
	case in = <-inbox:
		which = 2
	}
	e.mu.Lock()
	switch which {
	case 1:
		// Due by the time waited, whatever the run's clock says (a
		// fake one in tests moves only when told).
		for _, w := range e.st.Events {
			if waitKey(w) == waitKey(*timer) && !w.Fired && w.Due.Equal(timer.Due) && e.flying(w.Token) {
				return e.fire(ctx, w, nil)
			}
		}
		return nil
	case 2:
		return e.accept(ctx, in)
	}
	return e.land(ctx, l)
}

// stepTimer is the timer due first among those on running steps' tokens,
// or nil. In replay timers do not wait: they fire as recorded.
func (e *exec) stepTimer() *store.Wait {
	if e.replaying() {
		return nil
	}
	var first *store.Wait
	for i, w := range e.st.Events {
		if w.Kind != store.WaitTimer || w.Error != "" || w.Due.IsZero() || w.Fired || !e.flying(w.Token) {
			continue
		}
		if first == nil || w.Due.Before(first.Due) {
			first = &e.st.Events[i]
		}
	}
	if first == nil {
		return nil
	}
	w := *first
	return &w
}

// land takes a finished step: its outcome waits in st.Done to be handed
// over with its batch. A step finishing while others run is checkpointed
// at once, so it never runs again after a crash; a lone step is handed
// over (and checkpointed) next.
func (e *exec) land(ctx context.Context, l landed) error {
	f, _ := e.flights.get(l.t.ID)
	e.flights.del(l.t.ID)
	f.ctx.cancel()
	e.slots++
	f.batch.pending--
	if f.dropped {
		e.pump(ctx)
		return nil // cancelled by an interrupting event: it leaves nothing
	}
	if l.err != nil {
		return l.err
	}
	e.pump(ctx)
	if l.wait != "" {
		e.st.wait(l.t.ID, l.wait)
		return nil
	}
	e.st.Done[l.t.ID] = l.res
	delete(e.st.Waiting, l.t.ID)
	if len(e.flights) > 0 || len(e.queue) > 0 || len(f.batch.ids) > 1 {
		return e.checkpoint(ctx)
	}
	return nil
}

// drain cancels the steps still running and waits for them (without
// e.mu, which they may need), dropping what they return.
func (e *exec) drain() {
	for _, q := range e.queue {
		q.batch.pending--
	}
	e.queue = e.queue[:0]
	if n := e.next; n != nil { // started, never ran: nothing to wait for
		id := n.t.ID
		e.next, e.nextStep = nil, ready{}
		f, _ := e.flights.get(id)
		e.flights.del(id)
		f.ctx.cancel()
		f.batch.pending--
		e.slots++
	}
	for i := range e.flights {
		f := &e.flights[i].f
		f.dropped = true
		f.ctx.cancel()
	}
	for len(e.flights) > 0 {
		e.mu.Unlock()
		l := <-e.results
		e.mu.Lock()
		if f, ok := e.flights.get(l.t.ID); ok {
			e.flights.del(l.t.ID)
			f.batch.pending--
			e.slots++
		}
	}
}

// dropGone cancels the steps whose tokens an event took (an interrupting
// boundary event, a terminate end) and unqueues those not started.
func (e *exec) dropGone() {
	if len(e.flights) == 0 && len(e.queue) == 0 {
		return
	}
	at := func(id, node string) bool {
		for _, t := range e.st.Nav.Tokens {
			if t.ID == id {
				return t.Node == node
			}
		}
		return false
	}
	for i := range e.flights {
		if f := &e.flights[i].f; !f.dropped && !at(e.flights[i].id, f.node) {
			f.dropped = true
			f.ctx.cancel()
		}
	}
	kept := e.queue[:0]
	for _, q := range e.queue {
		if at(q.t.ID, q.t.Node) {
			kept = append(kept, q)
		} else {
			q.batch.pending--
		}
	}
	e.queue = kept
}

// handOverBatches hands over the finished batches newest first, stopping
// at one still running: a batch waits for every batch started after it
// (the paths events started while it ran). Before a batch is handed over
// the events that fell due on its tokens while its steps ran fire
// (fireOnDone); it then waits for the paths they start. With no batch
// left, outcomes a crashed run left in its checkpoint are handed over.
func (e *exec) handOverBatches(ctx context.Context) error {
	for len(e.batches) > 0 {
		b := e.batches[len(e.batches)-1]
		if b.pending > 0 {
			return nil
		}
		if fired, err := e.fireOnDone(ctx, b); err != nil || fired {
			return err
		}
		e.batches = e.batches[:len(e.batches)-1]
		if err := e.handOverOf(ctx, b.ids); err != nil {
			return err
		}
		// Handed over: no flight or queued step points at it any more.
		e.spare = b
	}
	return e.handOver(ctx)
}

// fireOnDone fires one non-interrupting event of a finished batch's
// tokens that came while their steps ran: live, a timer the run's clock
// passed; in replay, a delivery recorded mid-step. It reports whether it
// fired one. (An interrupting timer the clock passed does not fire: the
// step finished first.)
func (e *exec) fireOnDone(ctx context.Context, b *batch) (bool, error) {
	if len(e.st.Events) == 0 {
		return false, nil
	}
	now := e.r.cfg.Clock()
	for _, w := range e.st.Events {
		if w.Fired || w.Kind == store.WaitRetry || !slices.Contains(b.ids, w.Token) || e.interrupting(w.Event) {
			continue
		}
		if _, done := e.st.Done[w.Token]; !done {
			continue
		}
		if e.replaying() {
			name := midStepEvent(w.Event)
			if payload, ok := e.r.cfg.Answer(ctx, e.task.ID, name, e.st.Answers[name]+1); ok {
				return true, e.fireAs(ctx, w, payload, name)
			}
			continue
		}
		if w.Kind == store.WaitTimer && w.Error == "" && !w.Due.IsZero() && !w.Due.After(now) {
			return true, e.fire(ctx, w, nil)
		}
	}
	return false, nil
}
