package run_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// Events on a running step, live: a long LLM step is held at a gate (its
// provider call blocks until the test opens it) while the test moves a
// fake clock or delivers a message; the other path must run — its step's
// outcome handed over — before the gate opens. Nothing here depends on
// timing: each wait is for something the run does, never for time to pass
// (the limits below only turn a hang into a failure).

const hang = 60 * time.Second

// alarmClock is a fake run clock with timers: a channel from After
// receives when Advance moves the clock to its time.
type alarmClock struct {
	mu     sync.Mutex
	now    time.Time
	alarms []alarm
}

type alarm struct {
	at time.Time
	ch chan time.Time
}

func (c *alarmClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *alarmClock) Until(at time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !at.After(c.now) {
		ch <- c.now
		return ch
	}
	c.alarms = append(c.alarms, alarm{at: at, ch: ch})
	return ch
}

func (c *alarmClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.alarms[:0]
	for _, a := range c.alarms {
		if a.at.After(c.now) {
			kept = append(kept, a)
		} else {
			a.ch <- c.now
		}
	}
	c.alarms = kept
}

// gate wraps a provider: each call reports that it started, then waits
// until the gate opens (or its context ends: a cancelled step).
type gate struct {
	sdk.Provider
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate(inner sdk.Provider) *gate {
	return &gate{Provider: inner, started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gate) Chat(ctx context.Context, req *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	g.started <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Provider.Chat(ctx, req)
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// midRun is one pipeline run under a gate and an alarm clock.
type midRun struct {
	t     *testing.T
	path  string
	prep  *run.Prepared
	st    *store.Store
	clock *alarmClock
	gate  *gate
	tr    *tracer
	// handedOver receives each step span's name as its checkpoint commits
	// (the step's outcome was handed over).
	handedOver chan string
	mu         sync.Mutex
	finished   []string // steps as they finish (OnStep)
	stepped    chan string
}

func newMidRun(t *testing.T, path string) *midRun {
	t.Helper()
	prep := prepare(t, path)
	p, ok := prep.Providers.Get("default")
	if !ok {
		t.Fatal("no default provider")
	}
	m := &midRun{t: t, path: path, prep: prep, st: openStore(t), clock: &alarmClock{now: t0}, gate: newGate(p.Plugin),
		tr: &tracer{Navigator: prep.Navigator}, handedOver: make(chan string, 64), stepped: make(chan string, 64)}
	t.Cleanup(m.gate.open) // a failed test must not leave a step hanging
	return m
}

func (m *midRun) config(journal run.Journal) run.Config {
	p, _ := m.prep.Providers.Get("default")
	gated := *p
	gated.Plugin = m.gate
	return run.Config{Pipeline: m.prep.Pipeline, Navigator: m.tr, Routine: m.prep.Routine, Strategy: m.prep.Strategy,
		Prices: m.prep.Prices, Store: m.st, Journal: journal, Clock: m.clock.Now, Until: m.clock.Until,
		Providers: run.NewProviders(nil, &gated),
		OnStep: func(ev run.StepEvent) {
			m.mu.Lock()
			m.finished = append(m.finished, ev.Node)
			m.mu.Unlock()
			select {
			case m.stepped <- ev.Node:
			default:
			}
		},
		OnSpans: func(spans []store.Span) {
			for _, sp := range spans {
				if strings.HasPrefix(sp.Name, "step ") {
					select {
					case m.handedOver <- sp.Name:
					default:
					}
				}
			}
		}}
}

type ended struct {
	res *run.Result
	err error
}

func (m *midRun) start(cfg run.Config, id string) <-chan ended {
	end := make(chan ended, 1)
	go func() {
		res, err := run.NewRunner(cfg).Start(context.Background(), run.Input{ID: id})
		end <- ended{res, err}
	}()
	return end
}

// started waits until the gated step's provider call started.
func (m *midRun) started() {
	m.t.Helper()
	select {
	case <-m.gate.started:
	case <-time.After(hang):
		m.t.Fatal("the gated step never called its provider")
	}
}

// handed waits until step node's outcome was handed over, failing when
// the run ends first.
func (m *midRun) handed(node string, end <-chan ended) {
	m.t.Helper()
	for {
		select {
		case name := <-m.handedOver:
			if name == "step "+node {
				return
			}
		case e := <-end:
			m.t.Fatalf("the run ended before step %s was handed over: %+v %v", node, e.res, e.err)
		case <-time.After(hang):
			m.t.Fatalf("step %s was not handed over while the gated step ran", node)
		}
	}
}

func (m *midRun) ran(node string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.finished, node)
}

func (m *midRun) wait(end <-chan ended) *run.Result {
	m.t.Helper()
	select {
	case e := <-end:
		if e.err != nil {
			m.t.Fatal(e.err)
		}
		return e.res
	case <-time.After(hang):
		m.t.Fatal("the run did not end")
	}
	return nil
}

func (m *midRun) trace(id string) []string {
	m.t.Helper()
	tree, err := m.st.Tree(context.Background(), id)
	if err != nil {
		m.t.Fatal(err)
	}
	return tree.Executions[len(tree.Executions)-1].Execution.Trace
}

// steps is the trace without its calls.
func steps(trace []string) []string {
	var out []string
	for _, s := range trace {
		if strings.HasPrefix(s, "step ") {
			out = append(out, strings.TrimPrefix(s, "step "))
		}
	}
	return out
}

// sameAsSimulate checks the live run's enter/exit events against `routine
// simulate` with triggers.
func (m *midRun) sameAsSimulate(triggers ...string) {
	m.t.Helper()
	sim, err := run.Simulate(context.Background(), m.prep.Navigator, m.prep.Routine.Hash, run.SimOptions{Triggers: triggers, Routine: m.prep.Routine})
	if err != nil {
		m.t.Fatal(err)
	}
	m.tr.mu.Lock()
	got := eventCounts(m.tr.events)
	m.tr.mu.Unlock()
	if sim.Status != run.SimCompleted || !reflect.DeepEqual(got, eventCounts(sim.Events)) {
		m.t.Errorf("live events %v, simulate --trigger %v: %s %v", got, triggers, sim.Status, eventCounts(sim.Events))
	}
}

// replays checks that a self-replay of task id reproduces its trace.
func (m *midRun) replays(id string) {
	m.t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := replay.Config{Source: m.st, Pipeline: m.prep.Pipeline.Name, Strategies: []*strategy.Strategy{m.prep.Strategy}, Workers: 1, Logger: quiet,
		Prepare: func(ctx context.Context) (*run.Prepared, error) {
			return run.Prepare(ctx, m.path, builtinRegistry(m.t), quiet)
		}}
	var got []replay.Result
	if err := replay.Run(context.Background(), cfg, func(r replay.Result) error { got = append(got, r); return nil }); err != nil {
		m.t.Fatal(err)
	}
	found := false
	for _, r := range got {
		found = found || r.Task == id
		if r.Task == id && (!r.Reproduced || r.Status != store.StatusCompleted || r.Misses != 0) {
			m.t.Errorf("replay of %s: %s reproduced %v misses %d divergence %+v (error %q)", id, r.Status, r.Reproduced, r.Misses, r.Divergence, r.Error)
		}
	}
	if !found {
		m.t.Errorf("task %s was not replayed (%d results)", id, len(got))
	}
}

// TestMidStepTimer: a non-interrupting boundary timer on a running LLM
// step fires when the clock reaches it, and its path runs to its end
// while the step is still running; the step then completes and its own
// path runs. The events are those of `routine simulate --trigger late`,
// the fire is recorded as mid-step, and a replay reproduces the trace.
func TestMidStepTimer(t *testing.T) {
	ctx := context.Background()
	m := newMidRun(t, "testdata/events/boundary-llmnon.toml")
	end := m.start(m.config(nil), "n1")
	m.started()
	m.clock.Advance(time.Minute)
	m.handed("escalate", end)
	if m.ran("ask") {
		t.Fatal("ask finished before the gate opened")
	}
	m.gate.open()
	res := m.wait(end)
	if res.Status != store.StatusCompleted || res.Output["escalate"] == nil || res.Output["after"] == nil {
		t.Fatalf("got %s output %v, want completed through both paths (error %q)", res.Status, res.Output, res.Error)
	}
	if got, want := steps(m.trace("n1")), []string{"escalate", "ask", "after"}; !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	m.sameAsSimulate("late")
	if _, err := m.st.Recording(ctx, store.HumanKey("n1", "event late mid-step", 1)); err != nil {
		t.Errorf("the mid-step fire is not recorded: %v", err)
	}
	m.replays("n1")
}

// TestMidStepCycle: a cycle R3/PT10M on a running step fires three times,
// each starting its path while the step runs, and no more.
func TestMidStepCycle(t *testing.T) {
	m := newMidRun(t, "testdata/midstep/cycle.toml")
	end := m.start(m.config(nil), "c1")
	m.started()
	for range 3 {
		m.clock.Advance(10 * time.Minute)
		m.handed("notify", end)
	}
	m.clock.Advance(10 * time.Minute) // a fourth repetition is not due: R3
	if m.ran("ask") {
		t.Fatal("ask finished before the gate opened")
	}
	m.gate.open()
	res := m.wait(end)
	if res.Status != store.StatusCompleted {
		t.Fatalf("got %s (error %q)", res.Status, res.Error)
	}
	if got, want := steps(m.trace("c1")), []string{"notify", "notify", "notify", "ask", "after"}; !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	m.sameAsSimulate("remind", "remind", "remind")
	m.replays("c1")
}

// TestMidStepInterrupting: an interrupting boundary timer on a running
// step, reached by moving the clock, cancels the step (its provider call
// sees its context end) and takes its path.
func TestMidStepInterrupting(t *testing.T) {
	m := newMidRun(t, "testdata/events/boundary-llm.toml")
	end := m.start(m.config(nil), "i1")
	m.started()
	m.clock.Advance(50 * time.Millisecond)
	res := m.wait(end)
	if res.Status != store.StatusCompleted || res.Output["escalate"] == nil || res.Output["after"] != nil {
		t.Fatalf("got %s output %v, want completed through escalate only (error %q)", res.Status, res.Output, res.Error)
	}
	if got, want := steps(m.trace("i1")), []string{"escalate"}; !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	m.sameAsSimulate("late")
	m.replays("i1")
}

// TestMidStepMessage: messages delivered while a step runs (`sextant
// send` to a `run --wait`, through its inbox) reach the step's boundary
// events at once: a non-interrupting one runs its path beside the step, an
// interrupting one cancels the step. A signal (`sextant signal`) likewise.
func TestMidStepMessage(t *testing.T) {
	deliver := func(t *testing.T, inbox chan<- run.Inbound, name string) {
		t.Helper()
		done := make(chan error, 1)
		kind := store.WaitMessage
		if name == "nudge" {
			kind = store.WaitSignal
		}
		select {
		case inbox <- run.Inbound{Delivery: run.Delivery{Kind: kind, Name: name}, Done: done}:
		case <-time.After(hang):
			t.Fatalf("the run did not take message %q while its step ran", name)
		}
		if err := <-done; err != nil {
			t.Fatalf("message %q: %v", name, err)
		}
	}
	t.Run("non-interrupting", func(t *testing.T) {
		m := newMidRun(t, "testdata/midstep/message.toml")
		inbox := make(chan run.Inbound)
		cfg := m.config(nil)
		cfg.Inbox = inbox
		end := m.start(cfg, "m1")
		m.started()
		deliver(t, inbox, "ping")
		m.handed("pong", end)
		if m.ran("ask") {
			t.Fatal("ask finished before the gate opened")
		}
		m.gate.open()
		res := m.wait(end)
		if res.Status != store.StatusCompleted || res.Output["pong"] == nil || res.Output["after"] == nil || res.Output["stopped"] != nil {
			t.Fatalf("got %s output %v, want completed through pong and after (error %q)", res.Status, res.Output, res.Error)
		}
		if got, want := steps(m.trace("m1")), []string{"pong", "ask", "after"}; !slices.Equal(got, want) {
			t.Errorf("steps %v, want %v", got, want)
		}
		m.sameAsSimulate("ping")
		m.replays("m1")
	})
	t.Run("signal", func(t *testing.T) {
		m := newMidRun(t, "testdata/midstep/message.toml")
		inbox := make(chan run.Inbound)
		cfg := m.config(nil)
		cfg.Inbox = inbox
		end := m.start(cfg, "m3")
		m.started()
		deliver(t, inbox, "nudge")
		m.handed("nudged", end)
		if m.ran("ask") {
			t.Fatal("ask finished before the gate opened")
		}
		m.gate.open()
		res := m.wait(end)
		if res.Status != store.StatusCompleted || res.Output["nudged"] == nil || res.Output["after"] == nil {
			t.Fatalf("got %s output %v, want completed through nudged and after (error %q)", res.Status, res.Output, res.Error)
		}
		if got, want := steps(m.trace("m3")), []string{"nudged", "ask", "after"}; !slices.Equal(got, want) {
			t.Errorf("steps %v, want %v", got, want)
		}
		m.sameAsSimulate("nudge")
		m.replays("m3")
	})
	t.Run("interrupting", func(t *testing.T) {
		m := newMidRun(t, "testdata/midstep/message.toml")
		inbox := make(chan run.Inbound)
		cfg := m.config(nil)
		cfg.Inbox = inbox
		end := m.start(cfg, "m2")
		m.started()
		deliver(t, inbox, "stop")
		res := m.wait(end)
		if res.Status != store.StatusCompleted || res.Output["stopped"] == nil || res.Output["after"] != nil || res.Output["pong"] != nil {
			t.Fatalf("got %s output %v, want completed through stopped only (error %q)", res.Status, res.Output, res.Error)
		}
		if got, want := steps(m.trace("m2")), []string{"stopped"}; !slices.Equal(got, want) {
			t.Errorf("steps %v, want %v", got, want)
		}
		m.sameAsSimulate("stop")
		m.replays("m2")
	})
}

// crashJournal is the store until the test pulls the plug: from then on
// every write fails, as if the process had died there — what was
// committed before stays, nothing after it is written.
type crashJournal struct {
	*store.Store
	dead atomic.Bool
}

var errDead = errors.New("the process died here")

func (j *crashJournal) check() error {
	if j.dead.Load() {
		return errDead
	}
	return nil
}

func (j *crashJournal) Checkpoint(ctx context.Context, c *store.Checkpoint, spans ...store.Span) error {
	if err := j.check(); err != nil {
		return err
	}
	return j.Store.Checkpoint(ctx, c, spans...)
}

func (j *crashJournal) CheckpointExecution(ctx context.Context, c *store.Checkpoint, update func(*store.Execution), spans ...store.Span) error {
	if err := j.check(); err != nil {
		return err
	}
	return j.Store.CheckpointExecution(ctx, c, update, spans...)
}

func (j *crashJournal) FinishExecution(ctx context.Context, c *store.Checkpoint, update func(*store.Execution), st store.Status, spans ...store.Span) error {
	if err := j.check(); err != nil {
		return err
	}
	return j.Store.FinishExecution(ctx, c, update, st, spans...)
}

func (j *crashJournal) PutExecution(ctx context.Context, e *store.Execution) error {
	if err := j.check(); err != nil {
		return err
	}
	return j.Store.PutExecution(ctx, e)
}

func (j *crashJournal) SetTaskStatus(ctx context.Context, id string, st store.Status) error {
	if err := j.check(); err != nil {
		return err
	}
	return j.Store.SetTaskStatus(ctx, id, st)
}

func (j *crashJournal) SetTaskWaiting(ctx context.Context, id string, waits []store.Wait) error {
	if err := j.check(); err != nil {
		return err
	}
	return j.Store.SetTaskWaiting(ctx, id, waits)
}

func (j *crashJournal) PutRecording(ctx context.Context, r *store.Recording) error {
	if err := j.check(); err != nil {
		return err
	}
	return j.Store.PutRecording(ctx, r)
}

// TestMidStepCrash: a run that dies after a mid-step timer fired and its
// path ran, while the long step still ran, resumes without firing the
// timer again and without running the fired path again; the long step
// runs again (its call was never recorded).
func TestMidStepCrash(t *testing.T) {
	ctx := context.Background()
	m := newMidRun(t, "testdata/events/boundary-llmnon.toml")
	j := &crashJournal{Store: m.st}
	end := m.start(m.config(j), "k1")
	m.started()
	m.clock.Advance(time.Minute)
	m.handed("escalate", end)
	j.dead.Store(true)
	m.gate.open()
	if e := <-end; !errors.Is(e.err, errDead) {
		t.Fatalf("the dying run returned %+v %v, want its write refused", e.res, e.err)
	}
	m.clock.Advance(time.Hour) // the timer is long past: it must not fire again
	res, err := run.NewRunner(m.config(nil)).Resume(ctx, "k1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusCompleted || res.Output["escalate"] == nil || res.Output["after"] == nil {
		t.Fatalf("resumed: %s output %v, want completed through both paths (error %q)", res.Status, res.Output, res.Error)
	}
	if got, want := steps(m.trace("k1")), []string{"escalate", "ask", "after"}; !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	if _, err := m.st.Recording(ctx, store.HumanKey("k1", "event late mid-step", 2)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the timer fired again after the resume (%v)", err)
	}
}

// TestMidStepParallel: a timer fires on one step of a parallel batch while
// it runs (its sibling already finished): the timer's path is handed over
// first, then the batch in token order, then the join's successor.
func TestMidStepParallel(t *testing.T) {
	m := newMidRun(t, "testdata/midstep/parallel.toml")
	end := m.start(m.config(nil), "p1")
	m.started()
	for node := ""; node != "quick"; {
		select {
		case node = <-m.stepped:
		case <-time.After(hang):
			t.Fatal("quick never finished")
		}
	}
	m.clock.Advance(2 * time.Minute)
	m.handed("notify", end)
	if m.ran("ask") {
		t.Fatal("ask finished before the gate opened")
	}
	m.gate.open()
	res := m.wait(end)
	if res.Status != store.StatusCompleted {
		t.Fatalf("got %s (error %q)", res.Status, res.Error)
	}
	got := steps(m.trace("p1"))
	if len(got) != 4 || got[0] != "notify" || got[3] != "after" || !slices.Contains(got, "ask") || !slices.Contains(got, "quick") {
		t.Errorf("steps %v, want notify, then ask and quick, then after", got)
	}
	m.sameAsSimulate("late")
	m.replays("p1")
}
