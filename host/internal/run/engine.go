package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/score"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/tool"
	"github.com/sextant-dev/sextant/sdk"
)

// Config is everything a Runner needs; the CLI assembles it from a loaded
// pipeline.
type Config struct {
	Pipeline  *pipeline.Pipeline
	Navigator sdk.Navigator
	Routine   *sdk.Routine
	Strategy  *strategy.Strategy
	Providers *Providers
	// Tools are the pipeline's tool sources (see tools.go); nil when it
	// declares none.
	Tools *tool.Set
	// ToolReplay is set by replays to their on_miss policy: a tool call is
	// then answered from its recording and never executed, except on a
	// miss under "live" for tools whose replay is live. "" is a live run.
	ToolReplay string
	// Store is the live record. Resume needs it.
	Store *store.Store
	// Journal, when set, records runs instead of Store (replays keep their
	// record in memory and read recordings from the dataset).
	Journal Journal
	Prices  Prices
	Logger  *slog.Logger
	// Clock stamps spans; default time.Now. Replays pass the task's
	// recorded clock.
	Clock func() time.Time
	// Compiled, when set, is shared with other runners of the same
	// pipeline and strategy.
	Compiled *Compiled
	// Sleep, when set, lets a run that waits only for timers or retries
	// sleep until the next is due and go on (`sextant run --wait`) instead
	// of returning waiting. The run is checkpointed waiting first.
	Sleep func(ctx context.Context, d time.Duration) error
	// Until, when set, is how a run waits for the due time of a timer
	// attached to a running step (a boundary timer on an llm step): the
	// channel receives once the run's clock reaches t. Default: time.After
	// of the time from Clock to t. It takes the time, not a duration, so
	// that a fake clock in tests, which moves only when told, cannot move
	// between the run's reading it and its asking for the wake (the wake
	// would come late by that move).
	Until func(t time.Time) <-chan time.Time
	// Inbox, with Sleep, brings messages and signals from other processes
	// to this run (`sextant run --wait` serves `send` and `signal` on the
	// store's socket): a run waiting for them waits here too instead of
	// returning waiting, and takes each delivery as it comes, between steps
	// or while they run (to a boundary event of a running step).
	Inbox <-chan Inbound
	// Answer, when set, supplies recorded answers to human steps and
	// confirmations (replay): the n-th answer given at node in task.
	Answer func(ctx context.Context, task, node string, n int) (map[string]any, bool)
	// OnStep, when set, is called as each step finishes or pauses (from
	// the step's goroutine: running steps may report at once).
	OnStep func(StepEvent)
	// OnSpans, when set, is given the spans of every checkpoint once it
	// is committed (ids filled in), in commit order: live telemetry
	// exports them. It must not block.
	OnSpans func(spans []store.Span)
	// Events reads the routine's timer definitions and conditions; nil
	// finds it by sdk.EventSemantics's rule (Prepared finds it once).
	Events sdk.EventSemantics
}

// Runner executes tasks of one pipeline and records them durably.
type Runner struct {
	cfg   Config
	nodes map[string]sdk.Node
	// stepNames are the names of the routine's nodes' step spans
	// ("step NODE"), made once.
	stepNames map[string]string
	// runName is the name of a run's root span, "run PIPELINE".
	runName string
	// stepAttrs holds, per node, the attributes of the step span made
	// last (see stepAttributes).
	stepAttrs map[string]*atomic.Pointer[stepAttrs]
	// ref is the strategy's identity, hashed once.
	ref store.StrategyRef
	// stateless journals (replay) are never resumed: no state to encode.
	stateless bool
	// rules are the providers' rules hashes a started task records.
	rules map[string]string

	compiled *Compiled
	unpriced sync.Map // models already warned about
	// decisions checks every navigator decision before it is applied.
	decisions decisions
	// events reads timer definitions and conditions (Config.Events).
	events sdk.EventSemantics
	// conditions are the conditional events' conditions, compiled once.
	conditions map[string]func(sdk.Env) (bool, error)
	// abs is the pipeline file's absolute path (pipelineAbs).
	absOnce sync.Once
	abs     string
	absErr  error
	// outputBlind: the navigator never reads an outcome's output
	// (sdk.OutputBlind), so handOverOf need not name it (nameOutput).
	outputBlind bool
	// textPiece is the size of the pieces of a run's text arena.
	textPiece int
	// copyVars makes assignOutput copy vars at every output (the
	// reference path of the tests; see varsMine).
	copyVars bool
}

// Compiled caches parsed templates and compiled expressions. Runners of the
// same pipeline and strategy may share one (Config.Compiled) so that many
// short runs (replay) compile each template once.
type Compiled struct {
	templates sync.Map // templateKey → *cachedTemplate
	programs  sync.Map // expression source → *vm.Program
	envs      sync.Map // *strategy.Strategy → map[string]any, its Env()
}

// strategyEnv is st.Env(), built once per Compiled: every instance of a
// runner (and every runner sharing the Compiled) hands the navigator the
// same map, which a binding navigator client recognises without encoding
// the strategy again (sdk.NavigatorClient). Nobody modifies it.
func (c *Compiled) strategyEnv(st *strategy.Strategy) map[string]any {
	if st == nil {
		return nil
	}
	if v, ok := c.envs.Load(st); ok {
		return v.(map[string]any)
	}
	v, _ := c.envs.LoadOrStore(st, st.Env())
	return v.(map[string]any)
}

// Journal is what a run records into and reads recordings from.
// *store.Store is the durable one.
type Journal interface {
	CreateTask(ctx context.Context, t *store.Task) error
	CreateExecution(ctx context.Context, e *store.Execution) error
	Execution(ctx context.Context, task, id string) (*store.Execution, error)
	PutExecution(ctx context.Context, e *store.Execution) error
	SetTaskStatus(ctx context.Context, id string, st store.Status) error
	Checkpoint(ctx context.Context, c *store.Checkpoint, spans ...store.Span) error
	Recording(ctx context.Context, key string) (*store.Recording, error)
	PutRecording(ctx context.Context, r *store.Recording) error
	Redactor() *store.Redactor
	NewID() string
	Now() time.Time
}

var _ Journal = (*store.Store)(nil)

// NewRunner returns a runner; the routine must be loaded in the navigator.
func NewRunner(cfg Config) *Runner {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Journal == nil && cfg.Store != nil {
		cfg.Journal = cfg.Store
	}
	nodes := map[string]sdk.Node{}
	stepNames := map[string]string{}
	attrs := map[string]*atomic.Pointer[stepAttrs]{}
	for _, n := range cfg.Routine.Nodes {
		nodes[n.ID] = n
		stepNames[n.ID] = "step " + n.ID
		attrs[n.ID] = new(atomic.Pointer[stepAttrs])
	}
	r := &Runner{cfg: cfg, nodes: nodes, stepNames: stepNames, runName: "run " + cfg.Pipeline.Name, stepAttrs: attrs, compiled: cfg.Compiled,
		decisions: newDecisions(cfg.Pipeline.Routine.Navigator, cfg.Routine)}
	if ob, ok := cfg.Navigator.(sdk.OutputBlind); ok {
		r.outputBlind = ob.OutputBlind()
	}
	r.textPiece = textPiece(cfg.Pipeline.Steps)
	if r.compiled == nil {
		r.compiled = &Compiled{}
	}
	r.events = cfg.Events
	if r.events == nil && needsEvents(cfg.Routine) {
		r.events = eventSemantics(cfg.Navigator, cfg.Pipeline.Routine.Navigator)
	}
	for _, n := range cfg.Routine.Nodes {
		if d := n.Event; d != nil && d.Type == sdk.EventConditional && d.Condition != "" {
			if r.events == nil {
				cfg.Logger.Warn("no builtin navigator reads conditions; the conditional event fires only when named", "event", n.ID)
				continue
			}
			if x, err := r.events.Condition(d.Condition); err == nil {
				if r.conditions == nil {
					r.conditions = map[string]func(sdk.Env) (bool, error){}
				}
				r.conditions[n.ID] = x
			} else {
				cfg.Logger.Warn("conditional event's condition does not parse; it fires only when named", "event", n.ID, "err", err)
			}
		}
	}
	if cfg.Strategy != nil {
		r.ref = store.StrategyRef{Name: cfg.Strategy.Metadata.Name, Version: cfg.Strategy.Metadata.Version, Hash: cfg.Strategy.Hash()}
	}
	if sl, ok := cfg.Journal.(interface{ Stateless() bool }); ok {
		r.stateless = sl.Stateless()
	}
	if !r.stateless { // a replay writes no task: nothing to record them in
		r.rules = cfg.Providers.RulesHashes()
	}
	return r
}

// Input starts a task.
type Input struct {
	// ID names the task; "" lets the store pick one.
	ID string
	// Execution names the execution; "" lets the store pick one.
	Execution string
	Input     map[string]any
	Truth     json.RawMessage
	Tags      []string
	// Start names the start event to begin at (a message start event);
	// "" is the routine's default start.
	Start string
}

// Result is how a run (or a resumed run) ended.
type Result struct {
	Task      string       `json:"task"`
	Execution string       `json:"execution"`
	Status    store.Status `json:"status"`
	Error     string       `json:"error,omitempty"`
	Waiting   []Question   `json:"waiting,omitempty"`
	// Waits is everything a waiting run waits for: people, timers (with
	// their due times), messages, signals, retries.
	Waits         []store.Wait   `json:"waits,omitempty"`
	Output        map[string]any `json:"output,omitempty"`
	Steps         int            `json:"steps"`
	Tokens        int            `json:"tokens"`
	CostUSD       float64        `json:"cost_usd"`
	Violations    int            `json:"violations"`
	Confirmations int            `json:"confirmations"`
	Actions       []actionRecord `json:"actions,omitempty"`
	// Cited are the playbook bullets the run's replies cited, in order of
	// first citation (strategy.Cited): what feedback on the task tags.
	Cited []string `json:"cited,omitempty"`
	// Incident is where and why a run in status incident stopped.
	Incident *store.Incident `json:"incident,omitempty"`
	// Graded are the verdicts of the pipeline's model-graded assertions
	// on a completed run's output (see grade).
	Graded []score.Graded `json:"graded,omitempty"`
}

// Question is a person's pending decision.
type Question struct {
	Node     string `json:"node"`
	Question string `json:"question"`
	// Options are the answers the step allows (none: any answer).
	Options []string `json:"options,omitempty"`
}

// ErrLimit marks a run ended by one of its limits.
var ErrLimit = errors.New("limit exceeded")

// exec is one execution in progress.
type exec struct {
	r       *Runner
	task    *store.Task
	id      string
	traceID string
	st      *runState
	answers map[string]any
	// delivery is a message or signal to deliver before anything runs.
	delivery *Delivery
	// mu guards st while steps run: the goroutine driving the run holds
	// it, except while it waits for a step or a timer (await); steps take
	// it to touch st.
	mu sync.Mutex
	running
	// tools is the execution's tool bookkeeping (see tools.go).
	tools toolState
	// spanIDs derives the execution's span ids (see spanID).
	spanIDs     store.SpanIDs
	haveSpanIDs bool
	// text holds the run's short texts (see textArena).
	text textArena
	// spanIDBlock holds the ids of spanIDsPerBlock consecutive seqs
	// from spanIDFirst, 16 hex digits each (see spanID).
	spanIDBlock string
	spanIDFirst uint64
	rootSpanID  string // spanID(1), the parent of every step's span
	// stateBuf is the array checkpoints are encoded into, when the
	// Journal keeps none of their bytes (see checkpointLocked), and cp
	// the record they are passed in then.
	stateBuf []byte
	cp       store.Checkpoint
	// pooled: the run is one Start made, which takes maps from pools and
	// gives them back (release, releaseOutput); a stepwise run's outcomes
	// outlive its hand-over, and its state its calls.
	pooled bool
	// taskID is the task's id as expressions see it (exprEnvInto),
	// boxed once, by the first start.
	taskID any
	// ownVars is the vars map assignOutput or a decision's Set made last
	// (see varsMine).
	ownVars map[string]any
	// handing and spanBuf are the arrays handOverOf orders tokens and
	// numbers spans in; traceRoom is room for the trace (st.Trace).
	handing   []string
	traceRoom []string
	spanBuf   []store.Span
	// nextReq is navNext's request.
	nextReq sdk.NextRequest
	// lastChatVars is the chat request Vars made last (see chatVars);
	// steps running at once share it. chatVarsRoom is room for the
	// first, used once.
	lastChatVars atomic.Pointer[chatVars]
	chatVarsRoom atomic.Pointer[chatVars]
	// timeoutCtx is room for the run's first timeout context (drive),
	// used once.
	timeoutCtx     lazyCtx
	timeoutCtxUsed bool
}

// startFrame is what Start makes for a run: the run, its state, its
// task and its execution.
type startFrame struct {
	e         exec
	st        runState
	task      store.Task
	execution store.Execution
	// Room for a run of one step at a time: its batch (the run's spare
	// until its first start), the batch's token ids, the queue and the
	// list of batches.
	batch   batch
	ids     [1]string
	queue   [1]queued
	batches [1]*batch
	// startReq is the navigator's start request.
	startReq sdk.StartRequest
	// active is the run's entry among the runs in progress (track).
	active activeRun
	// Room for the run's first ready token (readyInto), the first
	// hand-over's order (handOverOf), its first chat Vars (chatVars) and
	// its first running step (flights).
	tokens   [1]sdk.Token
	handing  [1]string
	chatVars chatVars
	flights  [1]flightEntry
	// state is room for the encoded state, when the store takes the
	// checkpoints (see checkpointLocked), and trace for the trace of a
	// routine of up to 12 nodes (see handOverOf).
	state [1024]byte
	trace [24]string
}

// Start creates a task and runs it until it completes, fails or waits for
// a person.
func (r *Runner) Start(ctx context.Context, in Input) (*Result, error) {
	if err := r.startTools(ctx); err != nil {
		return nil, err // nothing is written: a source that cannot start fails the run before it begins
	}
	s := r.cfg.Journal
	id := in.ID
	if id == "" {
		id = s.NewID()
	}
	// The run, its state, task and execution in one allocation (filled
	// in below), with its entry among the runs in progress.
	f := &startFrame{}
	ctx, tracked, err := trackIn(ctx, id, &f.active)
	if err != nil {
		return nil, err
	}
	defer tracked.untrack()
	input, err := encodeInput(orEmpty(in.Input))
	if err != nil {
		return nil, fmt.Errorf("encode input: %w", err)
	}
	ref := r.ref
	f.task = store.Task{ID: id, Pipeline: r.cfg.Pipeline.Name, Input: input, Truth: in.Truth, Tags: in.Tags,
		Status: store.StatusRunning, Created: s.Now(), Strategy: ref, Start: in.Start, Owner: leaseOf(s)}
	task := &f.task
	if !r.stateless {
		task.Routine, task.Rules = r.cfg.Routine.Hash, r.rules
	}
	execID := in.Execution
	if execID == "" {
		execID = s.NewID()
	}
	// Waiting and Answers are made by their first entry: most runs
	// have none (both are left out of the encoded state when empty).
	f.st = runState{Done: doneMaps.Get().(map[string]*stepResult), Started: r.cfg.Clock()}
	e := &f.e
	defer e.release()
	e.r, e.task, e.id, e.st = r, task, execID, &f.st
	e.text.piece = r.textPiece
	e.pooled = true
	f.batch.ids = f.ids[:0]
	e.spare, e.queue, e.batches = &f.batch, f.queue[:0], f.batches[:0]
	e.tokens, e.handing, e.stateBuf, e.traceRoom, e.flights = f.tokens[:0], f.handing[:0], f.state[:0], f.trace[:0], f.flights[:0]
	e.chatVarsRoom.Store(&f.chatVars)
	e.traceID = store.TraceIDFor(task.ID, e.id)
	f.execution = store.Execution{Task: task.ID, ID: e.id, Strategy: ref, Mode: "live", Status: store.StatusRunning,
		TraceID: e.traceID, Started: e.st.Started}
	execution := &f.execution
	if abs, err := r.pipelineAbs(); err == nil {
		e.st.Pipeline = abs
	}
	// The run's vars map is its own from the start, with room for the
	// outputs to come: the first output goes into it in place (varsMine)
	// rather than into a copy. Until then only calls that keep nothing
	// see it (the navigator's start, the first checkpoint, which encodes).
	vars := make(map[string]any, 2+2*len(r.nodes))
	if !r.copyVars {
		e.ownVars = vars
	}
	e.st.Nav = sdk.State{Routine: r.cfg.Routine.Hash, Env: sdk.Env{Input: orEmpty(in.Input), Vars: vars, Strategy: r.compiled.strategyEnv(r.cfg.Strategy)}}
	e.st.SpanSeq = 1 // seq 1 is the execution's root span
	// The navigator keeps no run state, so it is asked before anything is
	// written: the task, its execution and the first checkpoint are then
	// one write, and a crash leaves no task or a resumable one.
	f.startReq = sdk.StartRequest{State: e.navState(), Trigger: in.Start}
	d, startErr := r.cfg.Navigator.Start(ctx, &f.startReq)
	f.startReq = sdk.StartRequest{} // navigators keep no request
	if startErr != nil {
		if errors.Is(startErr, sdk.ErrInvalid) {
			// The input does not fit the routine (a chain's input is
			// missing): bad input, so nothing is written.
			return nil, fmt.Errorf("start: %w", startErr)
		}
		startErr = fmt.Errorf("start: %w", startErr)
	} else {
		initial := e.st.Nav
		startErr = e.apply(ctx, navCall{what: "start"}, d)
		if inc := e.incidentOf(startErr, "", nil, nil); inc != nil {
			e.st.Nav, startErr = initial, inc // retry starts again
		}
	}
	if err := e.begin(ctx, execution); err != nil {
		return nil, err
	}
	if startErr != nil {
		return e.finish(ctx, startErr)
	}
	return e.drive(ctx)
}

// doneMaps are the maps of finished steps' results (runState.Done) runs
// that Start makes take and give back (see release); chatVarMaps are
// their chat requests' Vars maps (see chatVars).
var (
	doneMaps    = sync.Pool{New: func() any { return map[string]*stepResult{} }}
	chatVarMaps = sync.Pool{New: func() any { return make(map[string]any, 2) }}
)

// release gives back the maps a run that Start made took from doneMaps
// and chatVarMaps, once Start returns. Nothing can hold them then: no
// step runs (drive drains them), the run's state, which holds its Done
// map, is encoded by checkpoints and given to no one, and no provider
// keeps a request's Vars past its call (sdk.Provider). A Done map still
// holding results (a run waiting or in an incident) is left alone.
func (e *exec) release() {
	if c := e.lastChatVars.Swap(nil); c != nil && c.pooled {
		clear(c.m)
		chatVarMaps.Put(c.m)
	}
	if d := e.st.Done; d != nil && len(d) == 0 {
		e.st.Done = nil
		doneMaps.Put(d)
	}
}

// beginner is a Journal that writes a task, its first execution and that
// execution's first checkpoint atomically (*store.Store does).
type beginner interface {
	Begin(ctx context.Context, t *store.Task, e *store.Execution, c *store.Checkpoint) error
}

// begin records the new task and execution with the first checkpoint.
func (e *exec) begin(ctx context.Context, execution *store.Execution) error {
	s := e.r.cfg.Journal
	if b, ok := s.(beginner); ok {
		if _, reuse := s.(*store.Store); reuse {
			// The store keeps no part of the checkpoint nor of its bytes
			// once Begin returns, as with Checkpoint: the first
			// checkpoint is encoded into the run's buffer too (see
			// checkpointLocked).
			c := &e.cp
			if err := e.fillCheckpoint(c, e.stateBuf); err != nil {
				return err
			}
			err := b.Begin(ctx, e.task, execution, c)
			e.stateBuf, e.cp = c.State[:0], store.Checkpoint{}
			return err
		}
		c, err := e.checkpointRecord()
		if err != nil {
			return err
		}
		return b.Begin(ctx, e.task, execution, c)
	}
	if err := s.CreateTask(ctx, e.task); err != nil {
		return err
	}
	if err := s.CreateExecution(ctx, execution); err != nil {
		return err
	}
	return e.checkpoint(ctx)
}

// PipelineOf returns the pipeline file a task was started from, read from
// its latest checkpoint.
func PipelineOf(ctx context.Context, s *store.Store, taskID string) (string, error) {
	tree, err := s.Tree(ctx, taskID)
	if err != nil {
		return "", err
	}
	for i := len(tree.Executions) - 1; i >= 0; i-- {
		if cp := tree.Executions[i].Checkpoint; cp != nil {
			st, err := decodeState(cp.State)
			if err != nil {
				return "", fmt.Errorf("task %s: read checkpoint: %w", taskID, err)
			}
			return st.Pipeline, nil
		}
	}
	return "", fmt.Errorf("task %s has no checkpoint", taskID)
}

// Resume continues a task from its latest checkpoint. answers are given to
// the steps waiting for a person (`sextant resume TASK --set k=v`); timers
// that are due fire.
func (r *Runner) Resume(ctx context.Context, taskID string, answers map[string]any) (*Result, error) {
	ctx, tracked, err := track(ctx, taskID)
	if err != nil {
		return nil, err
	}
	defer tracked.untrack()
	e, res, err := r.load(ctx, taskID)
	if e == nil {
		return res, err
	}
	if err := e.inIncident(); err != nil {
		return nil, err
	}
	e.answers = answers
	if len(answers) > 0 && len(e.st.Waiting) == 0 {
		return nil, sdk.Errorf(sdk.CodeInvalid, "task %s is not waiting for an answer; drop --set", taskID)
	}
	if err := r.claim(ctx, taskID, store.StatusWaiting, store.StatusInterrupted); err != nil {
		return nil, err
	}
	return e.drive(ctx)
}

// Deliver gives a message or signal to a waiting task and continues it.
// A delivery the task does not wait for is an error (ErrNoWaiter) naming
// what it waits for; nothing is written then.
func (r *Runner) Deliver(ctx context.Context, taskID string, d Delivery) (*Result, error) {
	ctx, tracked, err := track(ctx, taskID)
	if err != nil {
		return nil, err
	}
	defer tracked.untrack()
	e, res, err := r.load(ctx, taskID)
	if e == nil {
		if err == nil {
			err = sdk.Errorf(sdk.CodeInvalid, "task %s is %s; it waits for nothing", taskID, res.Status)
		}
		return nil, err
	}
	if err := e.inIncident(); err != nil {
		return nil, err
	}
	e.syncWaits()
	if len(e.match(d)) == 0 {
		return nil, &NoWaiterError{Task: taskID, Kind: d.Kind, Name: d.Name, Key: d.Key, Waits: e.waits()}
	}
	e.delivery = &d
	if err := r.claim(ctx, taskID, store.StatusWaiting, store.StatusInterrupted); err != nil {
		return nil, err
	}
	return e.drive(ctx)
}

// load reads a task's latest live checkpoint into an execution. A run
// that already ended gives its result and no execution.
func (r *Runner) load(ctx context.Context, taskID string) (*exec, *Result, error) {
	s := r.cfg.Store
	tree, err := s.Tree(ctx, taskID)
	if err != nil {
		return nil, nil, err
	}
	var last *store.ExecutionTree
	for i := range tree.Executions {
		if tree.Executions[i].Execution.Mode != "replay" {
			last = &tree.Executions[i]
		}
	}
	if last == nil || last.Checkpoint == nil {
		return nil, nil, fmt.Errorf("task %s has no checkpoint to resume from", taskID)
	}
	switch st := last.Execution.Status; st {
	case store.StatusCompleted, store.StatusFailed, store.StatusCancelled:
		if tree.Task.Status == st {
			return nil, nil, sdk.Errorf(sdk.CodeInvalid, "task %s already %s; nothing to resume", taskID, st)
		}
		// Killed between the execution's final status and the task's:
		// the run is over, only the task's status is left to write.
		res, err := r.settle(ctx, &tree.Task, last)
		return nil, res, err
	}
	if h := r.ref.Hash; tree.Task.Strategy.Hash != "" && tree.Task.Strategy.Hash != h {
		return nil, nil, sdk.Errorf(sdk.CodeInvalid, "task %s ran under strategy %s %s (%s…); the pipeline's strategy is now %s (%s…)",
			taskID, tree.Task.Strategy.Name, tree.Task.Strategy.Version, short(tree.Task.Strategy.Hash), r.cfg.Strategy.Metadata.Version, short(h))
	}
	st, err := decodeStateOf(last.Checkpoint.State, &tree.Task)
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: read checkpoint: %w", taskID, err)
	}
	st.Nav.Env.Strategy = r.compiled.strategyEnv(r.cfg.Strategy)
	task := tree.Task
	return &exec{r: r, task: &task, id: last.Execution.ID, traceID: last.Execution.TraceID, st: st}, nil, nil
}

// settle writes the task status a run ended with but did not record, and
// reports the run's result from its last checkpoint.
func (r *Runner) settle(ctx context.Context, task *store.Task, last *store.ExecutionTree) (*Result, error) {
	st, err := decodeState(last.Checkpoint.State)
	if err != nil {
		return nil, fmt.Errorf("task %s: read checkpoint: %w", task.ID, err)
	}
	if err := r.cfg.Store.SetTaskStatus(ctx, task.ID, last.Execution.Status); err != nil {
		return nil, err
	}
	e := &exec{r: r, task: task, id: last.Execution.ID, traceID: last.Execution.TraceID, st: st}
	return e.result(last.Execution.Status, last.Execution.Error), nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// pipelineAbs is filepath.Abs of the pipeline's file, found once: a
// relative path costs a look at the working directory each time.
func (r *Runner) pipelineAbs() (string, error) {
	r.absOnce.Do(func() { r.abs, r.absErr = filepath.Abs(r.cfg.Pipeline.File) })
	return r.abs, r.absErr
}

// encodeInput is json.Marshal of a task's input, written directly as a
// checkpoint's variables are (appendMap) unless that cannot write it as
// encoding/json would.
func encodeInput(in map[string]any) ([]byte, error) {
	// Room for a small input at once, rather than growing from nothing.
	if b, err := appendMap(make([]byte, 0, 128), in, 0); err == nil {
		return b, nil
	}
	return json.Marshal(in)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// drive runs the routine until the instance ends or waits. Ready steps
// start in batches and run in their own goroutines while the run goes on:
// a timer, message or signal on a running step's token fires when it comes
// (a non-interrupting one starts its path at once, concurrently; an
// interrupting one cancels the step), and the paths it starts run their
// steps before the long step ends. Navigator calls stay on this goroutine,
// one at a time; the order outcomes are handed over in is fixed by
// handOverBatches.
func (e *exec) drive(ctx context.Context) (*Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	lim := e.r.cfg.Pipeline.Limits
	parent := ctx
	// The timeout is kept twice: as a context deadline, which ends a call
	// that blocks, and against the run's clock between steps, so that a
	// run whose clock has passed its deadline stops whatever the clock is.
	// Time spent waiting for an event is not run time: the timeout counts
	// from each start, resume or wake-up.
	var deadline time.Time
	var timeout *lazyCtx // the run's timeout context, once armed
	arm := func() {
		if lim.Timeout > 0 {
			if timeout != nil {
				timeout.cancel()
			}
			// context.WithTimeout, made only if something waits on it
			// (see lazyCtx); the first in the exec's room for it.
			due := time.Now().Add(lim.Timeout.Std())
			if !e.timeoutCtxUsed {
				e.timeoutCtxUsed = true
				timeout = &e.timeoutCtx
				timeout.parent, timeout.deadline = parent, due
			} else {
				timeout = newLazyCtx(parent, due)
			}
			ctx = timeout
			deadline = e.r.cfg.Clock().Add(lim.Timeout.Std())
		}
	}
	arm()
	defer func() {
		if timeout != nil {
			timeout.cancel()
		}
	}()
	// Whatever failed once the run's own deadline passed (a provider call,
	// a navigator call) failed because of the timeout limit: say so.
	finish := func(err error) (*Result, error) {
		e.drain()
		if c := cancelOf(parent); c != nil {
			return e.cancelled(ctx, c)
		}
		if err != nil && ctx.Err() != nil && parent.Err() == nil {
			err = fmt.Errorf("%w: timeout %s", ErrLimit, lim.Timeout.Std())
		}
		return e.finish(ctx, err)
	}
	defer e.stopSteppers()
	defer e.drain() // steps still running when the run returns early
	for {
		if c := cancelOf(parent); c != nil {
			return finish(c) // before anything a cancelled step returned is handed over
		}
		if err := e.handOverBatches(ctx); err != nil {
			return finish(err)
		}
		if e.replaying() {
			e.applySets(ctx)
		}
		e.dropGone()
		if e.completed() {
			return finish(nil)
		}
		if !deadline.IsZero() && e.r.cfg.Clock().After(deadline) {
			return finish(fmt.Errorf("%w: timeout %s", ErrLimit, lim.Timeout.Std()))
		}
		e.syncWaits()
		if d := e.delivery; d != nil {
			e.delivery = nil
			if _, err := e.deliver(ctx, *d); err != nil {
				return finish(err)
			}
			continue
		}
		if in, ok := e.poll(); ok {
			if err := e.accept(ctx, in); err != nil {
				return finish(err)
			}
			continue
		}
		if fired, err := e.fireDue(ctx); err != nil {
			return finish(err)
		} else if fired {
			continue
		}
		if batch := e.readyInto(e.tokens[:0]); len(batch) > 0 {
			e.tokens = batch[:0] // start keeps none of it
			if n := e.st.Steps + e.started() + len(batch); lim.MaxSteps > 0 && n > lim.MaxSteps {
				return finish(fmt.Errorf("%w: max_steps %d (the next batch would run step %d)", ErrLimit, lim.MaxSteps, n))
			}
			e.start(ctx, batch)
			continue
		}
		if len(e.flights) > 0 {
			if err := e.await(ctx); err != nil {
				return finish(err)
			}
			continue
		}
		if len(e.batches) > 0 {
			continue // finished batches left to hand over
		}
		if len(e.st.Waiting) > 0 || e.waitsForEvents() {
			if slept, err := e.sleep(parent); err != nil {
				if c := cancelOf(parent); c != nil {
					return e.cancelled(ctx, c)
				}
				return nil, err
			} else if slept {
				arm()
				continue
			}
			return e.wait(ctx)
		}
		return finish(fmt.Errorf("routine stopped with no step to run and nothing to wait for (tokens: %s)", e.tokenSummary()))
	}
}

// completed reports whether the navigator said the instance is done.
func (e *exec) completed() bool {
	return e.st.Complete
}

// ready lists the tokens whose steps should run now, in state order: not
// running, not finished. A human step without an answer becomes a
// waiting question instead.
func (e *exec) ready() []sdk.Token { return e.readyInto(nil) }

// readyInto is ready appending to out.
func (e *exec) readyInto(out []sdk.Token) []sdk.Token {
	for _, t := range e.st.Nav.Tokens {
		if t.Status != sdk.Ready {
			continue
		}
		if _, done := e.st.Done[t.ID]; done {
			continue
		}
		if e.busy(t.ID) {
			continue
		}
		if _, waiting := e.st.Waiting[t.ID]; waiting && len(e.answers) == 0 {
			continue
		}
		if t.DelayMS > 0 {
			if a, ok := e.st.Released[t.ID]; !ok || a != t.Attempt {
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// handOver gives every finished step's outcome to the navigator (see
// handOverOf).
func (e *exec) handOver(ctx context.Context) error { return e.handOverOf(ctx, nil) }

// handOverOf gives finished steps' outcomes to the navigator, in token
// order, writing their spans and checkpointing after each: the outcomes
// of the tokens only, or every outcome when only is nil.
func (e *exec) handOverOf(ctx context.Context, only []string) error {
	if len(e.st.Done) == 0 {
		return nil
	}
	// order and the numbered spans live in arrays the run keeps for every
	// hand-over; taken, so that a hand-over inside this one (none today)
	// would make its own.
	order, spanBuf := e.handing[:0], e.spanBuf
	e.handing, e.spanBuf = nil, nil
	defer func() { e.handing = order[:0] }()
	for _, t := range e.st.Nav.Tokens {
		if _, ok := e.st.Done[t.ID]; ok && (only == nil || slices.Contains(only, t.ID)) {
			order = append(order, t.ID)
		}
	}
	for id := range e.st.Done { // results whose token vanished: drop them
		if only != nil && !slices.Contains(only, id) {
			continue
		}
		found := false
		for _, o := range order {
			found = found || o == id
		}
		if !found {
			delete(e.st.Done, id)
		}
	}
	for _, id := range order {
		res := e.st.Done[id]
		if !e.hasToken(id) {
			// An outcome handed over before this one removed the token
			// (an error boundary event cancelling its activity): the
			// result is dropped, as Zeebe drops a cancelled job's.
			delete(e.st.Done, id)
			continue
		}
		node := e.tokenNode(id)
		var spans []store.Span
		if e.spansPassed() {
			spans = e.numberInto(spanBuf[:0], res.Spans)
			spanBuf = spans
		} else {
			spans = e.number(res.Spans)
		}
		trace := e.st.Trace
		if trace == nil {
			// Room for a step and a call per node, before it grows: the
			// start frame's, when it has that much.
			if n := 2 * len(e.r.nodes); cap(e.traceRoom) >= n {
				trace, e.traceRoom = e.traceRoom[:0], nil
			} else {
				trace = make([]string, 0, n)
			}
		}
		if trace = appendTrace(trace, spans, &e.text); len(trace) > 0 {
			e.st.Trace = trace
		}
		if !res.Handed { // handed over before an incident: counted then
			e.st.Steps++
		}
		e.st.Tokens += res.Tokens
		e.st.CostUSD += res.CostUSD
		for _, id := range res.Cited {
			if !slices.Contains(e.st.Cited, id) {
				e.st.Cited = append(e.st.Cited, id)
			}
		}
		if !res.Handed { // else assigned before an incident, and maybe changed by retry --set since
			if err := e.assignOutput(id, node, res.Outcome); err != nil {
				return err
			}
		}
		if !e.r.outputBlind {
			res.Outcome.Output = e.nameOutput(node, res.Outcome.Output)
		}
		before := e.st.Nav
		d, err := e.navNext(ctx, id, res.Outcome)
		delete(e.st.Done, id)
		if err != nil {
			return fmt.Errorf("navigator after step %q: %w", node, err)
		}
		err = e.apply(ctx, navCall{"next after step", node}, d)
		if inc := e.incidentOf(err, id, res, &before); inc != nil {
			if e.r.outputBlind {
				// The outcome kept is the one handed over, named.
				res.Outcome.Output = e.nameOutput(node, res.Outcome.Output)
			}
			e.afterStep(inc, id, res, before)
			if e.retried(ctx) { // a replay retries as the recorded run did
				if err := e.checkpoint(ctx, spans...); err != nil {
					return err
				}
				continue
			}
			err = inc
		}
		if err != nil {
			if res.Outcome.Status == sdk.Failed && !errors.As(err, new(*incidentError)) {
				err = fmt.Errorf("%w (step %q: %s)", err, node, res.Err)
			}
			// The step's spans are part of the record even when the routine fails.
			if cerr := e.checkpoint(ctx, spans...); cerr != nil {
				return cerr
			}
			return err
		}
		if err := e.checkpoint(ctx, spans...); err != nil {
			return err
		}
		releaseOutput(res)
		if err := e.checkLimits(); err != nil {
			return err
		}
	}
	e.spanBuf = spanBuf[:0]
	return nil
}

// spansPassed reports whether a checkpoint's spans are only passed: the
// store encodes them before Checkpoint returns and keeps no part of them,
// and no OnSpans hook is given them. handOverOf then numbers every step's
// spans into one array.
func (e *exec) spansPassed() bool {
	_, st := e.r.cfg.Journal.(*store.Store)
	return st && e.r.cfg.OnSpans == nil
}

func (e *exec) checkLimits() error {
	lim := e.r.cfg.Pipeline.Limits
	switch {
	case lim.MaxTokens > 0 && e.st.Tokens > lim.MaxTokens:
		return fmt.Errorf("%w: max_tokens %d (used %d)", ErrLimit, lim.MaxTokens, e.st.Tokens)
	case lim.MaxCostUSD > 0 && e.st.CostUSD > lim.MaxCostUSD:
		return fmt.Errorf("%w: max_cost_usd %s (spent %s)", ErrLimit, usd(lim.MaxCostUSD), usd(e.st.CostUSD))
	}
	return nil
}

func (e *exec) hasToken(id string) bool {
	for _, t := range e.st.Nav.Tokens {
		if t.ID == id {
			return true
		}
	}
	return false
}

func (e *exec) tokenNode(id string) string {
	for _, t := range e.st.Nav.Tokens {
		if t.ID == id {
			return t.Node
		}
	}
	return id
}

// nameOutput gives a single-valued output ({"value": x}) the name of the
// node's one declared output as well, so navigators that collect outputs
// by name (DAG fan-out, chains) find it.
func (e *exec) nameOutput(node string, out map[string]any) map[string]any {
	n, ok := e.r.nodes[node]
	if !ok || len(n.Outputs) != 1 || out == nil {
		return out
	}
	v, single := out["value"]
	if _, named := out[n.Outputs[0]]; !single || len(out) != 1 || named {
		return out
	}
	return map[string]any{"value": v, n.Outputs[0]: v}
}

// assignOutput stores a step's output in vars: under the node id, and under
// each output name the routine declares for the node. Fan-out instances
// (tokens carrying an index or loop counter) are collected by the navigator
// itself through Decision.Set.
func (e *exec) assignOutput(token, node string, out sdk.Outcome) error {
	if out.Output == nil {
		return nil
	}
	for _, t := range e.st.Nav.Tokens {
		if t.ID == token {
			if _, ok := t.Attrs["index"]; ok {
				return nil
			}
			if _, ok := t.Attrs["loopCounter"]; ok {
				return nil
			}
		}
	}
	vars := e.st.Nav.Env.Vars
	if !e.varsMine(out) {
		hint := len(e.st.Nav.Env.Vars) + 2
		if e.ownVars == nil {
			// The run's first: room for the outputs still to come, which
			// go in place unless the navigator replaces vars (Decision.Set)
			// as it goes, when later copies are made to measure.
			hint += 2 * len(e.r.nodes)
		}
		vars = make(map[string]any, hint)
		for k, v := range e.st.Nav.Env.Vars {
			vars[k] = v
		}
		e.ownVars = vars
	}
	value, whole := out.Output["value"], len(out.Output) == 1
	if whole && value != nil {
		vars[node] = value
	} else {
		vars[node] = out.Output
	}
	if n, ok := e.r.nodes[node]; ok {
		for _, name := range n.Outputs {
			if v, ok := out.Output[name]; ok {
				vars[name] = v
			} else if len(n.Outputs) == 1 {
				vars[name] = vars[node]
			}
		}
	}
	e.st.Nav.Env.Vars = vars
	return nil
}

// varsMine reports whether assignOutput may write out's values into the
// current vars map itself rather than into a copy: vars are otherwise
// never changed in place, since whatever was handed them may hold them.
// It may when assignOutput (or Decision.Apply, for the navigator's Set:
// see apply) made the map and nothing that was handed it
// can still read it: no step runs or waits to start (steps read vars as
// they started), no other outcome waits to be handed over, and out holds
// scalars only, so that it cannot hold the map. Navigator calls and
// checkpoints hold nothing past their return (sdk.Navigator's contract;
// fillCheckpoint encodes), and a state kept to restore on an incident is
// taken after assignOutput. See RATIONALE.md, "Why a step's output is
// written into the run's vars map only when nothing else can read it".
func (e *exec) varsMine(out sdk.Outcome) bool {
	if e.r.copyVars || e.ownVars == nil || len(e.flights) > 0 || len(e.queue) > 0 || e.next != nil || len(e.st.Done) > 1 ||
		!sameMap(e.ownVars, e.st.Nav.Env.Vars) || sameMap(out.Output, e.ownVars) {
		return false
	}
	for _, v := range out.Output {
		switch v.(type) {
		case nil, string, bool, float64, float32, int, int64, int32, uint, uint64, uint32, json.Number:
		default:
			return false
		}
	}
	return true
}

// sameMap reports whether a and b are the same map (not equal ones).
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// apply checks and applies a navigator decision (call names the navigator
// call that returned it), choosing for the navigator when it asks and
// ending on a fault.
func (e *exec) apply(ctx context.Context, call navCall, d *sdk.Decision) error {
	for i := 0; ; i++ {
		next, err := e.r.decisions.apply(call, e.st.Nav, d)
		if err != nil {
			return err
		}
		if len(d.Set) > 0 && !sameMap(next.Env.Vars, e.st.Nav.Env.Vars) && !sameMap(next.Env.Vars, d.Set) {
			// Decision.Apply made the map that takes the navigator's
			// Set, and nothing else holds it (the state kept to restore
			// on an incident holds the one before): the next output may
			// go into it in place (varsMine) rather than into a copy.
			e.ownVars = next.Env.Vars
		}
		e.st.Nav = next
		if d.Complete {
			e.st.Complete = true
		}
		if d.Fault != nil {
			return &faultError{d.Fault}
		}
		if d.Choice == nil {
			return nil
		}
		if i > 1000 {
			return fmt.Errorf("navigator asked for more than 1000 choices in a row at %q", d.Choice.Node)
		}
		// The host's path selection: without conditions, an exclusive
		// gateway takes its first flow, an inclusive one all of them.
		choice := d.Choice
		flows := []string{choice.Flows[0].ID}
		if choice.Multi {
			flows = flows[:0]
			for _, f := range choice.Flows {
				flows = append(flows, f.ID)
			}
		}
		d, err = e.navNext(ctx, choice.Token, sdk.Outcome{Status: sdk.OK, Flows: flows})
		if err != nil {
			return fmt.Errorf("navigator at %q: %w", choice.Node, err)
		}
		call = navCall{"next after choice at", choice.Node}
	}
}

// navNext calls the navigator's Next with the run's state. The request
// lives in the exec, reused call after call: a navigator keeps no part of
// a request past the call (sdk.Navigator), and the request holds nothing
// between calls.
func (e *exec) navNext(ctx context.Context, token string, out sdk.Outcome) (*sdk.Decision, error) {
	e.nextReq = sdk.NextRequest{State: e.navState(), Token: token, Outcome: out}
	d, err := e.r.cfg.Navigator.Next(ctx, &e.nextReq)
	e.nextReq = sdk.NextRequest{}
	return d, err
}

// number assigns sequence numbers and ids to a step's spans: the first is
// the step's own span (a child of the root), the rest its children.
func (e *exec) number(spans []store.Span) []store.Span {
	return e.numberInto(make([]store.Span, 0, len(spans)), spans)
}

// numberInto is number appending to out (empty).
func (e *exec) numberInto(out []store.Span, spans []store.Span) []store.Span {
	out = slices.Grow(out, len(spans))[:len(spans)]
	for i, sp := range spans {
		e.st.SpanSeq++
		sp.Task, sp.Execution, sp.TraceID = e.task.ID, e.id, e.traceID
		sp.Seq = e.st.SpanSeq
		sp.SpanID = e.spanID(sp.Seq)
		if i == 0 {
			if e.rootSpanID == "" {
				e.rootSpanID = e.spanID(1)
			}
			sp.ParentSpanID = e.rootSpanID
		} else {
			sp.ParentSpanID = out[0].SpanID
		}
		out[i] = sp
	}
	return out
}

// spanID is store.SpanIDFor of the execution's span seq (the caller
// holds e.mu, or no step runs).
func (e *exec) spanID(seq uint64) string {
	if !e.haveSpanIDs {
		e.spanIDs, e.haveSpanIDs = store.NewSpanIDs(e.task.ID, e.id), true
	}
	// Ids are derived a block at a time into one string, and a span's id
	// is a piece of it: a run's spans take one allocation per block of
	// ids, not one each.
	if seq == 0 {
		return e.spanIDs.ID(seq)
	}
	first := (seq-1)/spanIDsPerBlock*spanIDsPerBlock + 1
	if e.spanIDBlock == "" || e.spanIDFirst != first {
		b, start := e.text.room(16 * spanIDsPerBlock)
		var buf [16]byte
		for i := range uint64(spanIDsPerBlock) {
			b.Write(e.spanIDs.AppendID(buf[:0], first+i))
		}
		e.spanIDBlock, e.spanIDFirst = e.text.done(start), first
	}
	at := 16 * (seq - first)
	return e.spanIDBlock[at : at+16]
}

// spanIDsPerBlock is how many span ids spanID derives at once: those of
// a ten-step run and its root.
const spanIDsPerBlock = 32

// checkpoint records the run's state (with spans). The goroutine driving
// the run calls it (it holds e.mu, or no step runs); a step calls
// checkpointLocked with e.mu held.
func (e *exec) checkpoint(ctx context.Context, spans ...store.Span) error {
	return e.checkpointLocked(ctx, spans...)
}

func (e *exec) checkpointLocked(ctx context.Context, spans ...store.Span) error {
	// The store keeps none of a checkpoint's bytes once Checkpoint
	// returns, so the run encodes every checkpoint into one buffer;
	// another Journal may keep them, and gets a buffer of its own.
	_, reuse := e.r.cfg.Journal.(*store.Store)
	var buf []byte
	if reuse {
		buf = e.stateBuf
	}
	var c *store.Checkpoint
	if reuse {
		c = &e.cp // the store keeps no part of it either
	} else {
		c = new(store.Checkpoint)
	}
	if err := e.fillCheckpoint(c, buf); err != nil {
		return err
	}
	err := e.r.cfg.Journal.Checkpoint(ctx, c, spans...)
	if reuse {
		e.stateBuf = c.State[:0]
		e.cp = store.Checkpoint{}
	}
	if err != nil {
		return err
	}
	if e.r.cfg.OnSpans != nil && len(spans) > 0 {
		e.r.cfg.OnSpans(spans)
	}
	return nil
}

// checkpointRecord is the checkpoint of the current state.
func (e *exec) checkpointRecord() (*store.Checkpoint, error) { return e.checkpointInto(nil) }

// checkpointInto is checkpointRecord with the state encoded into buf's
// array when it is large enough.
func (e *exec) checkpointInto(buf []byte) (*store.Checkpoint, error) {
	c := &store.Checkpoint{}
	if err := e.fillCheckpoint(c, buf); err != nil {
		return nil, err
	}
	return c, nil
}

// fillCheckpoint sets c to checkpointInto's record.
func (e *exec) fillCheckpoint(c *store.Checkpoint, buf []byte) error {
	// Neither the strategy nor the input is checkpointed: Resume rebuilds
	// the strategy from the strategy file, whose hash it checks against
	// the task's, and takes the input from the task, which holds it once
	// (see decodeStateOf). A checkpoint then costs what the run changed,
	// not the size of its input.
	var b []byte
	if !e.r.stateless {
		// Encode a copy: steps of the batch may be reading the state
		// right now.
		cp := *e.st
		cp.Nav.Env.Strategy, cp.Nav.Env.Input = nil, nil
		var err error
		if b, err = cp.encodeInto(buf); err != nil {
			return fmt.Errorf("encode run state: %w", err)
		}
	}
	*c = store.Checkpoint{Task: e.task.ID, Execution: e.id, Step: uint64(e.st.Steps),
		State: b, Updated: e.r.cfg.Clock()}
	return nil
}

// wait pauses the run for a person, a timer, a message, a signal or a
// retry delay.
func (e *exec) wait(ctx context.Context) (*Result, error) {
	if err := e.checkpoint(ctx); err != nil {
		return nil, err
	}
	if err := e.setWaiting(ctx); err != nil {
		return nil, err
	}
	res := e.result(store.StatusWaiting, "")
	return res, nil
}

func (e *exec) tokenSummary() string {
	var parts []string
	for _, t := range e.st.Nav.Tokens {
		parts = append(parts, fmt.Sprintf("%s@%s:%s", t.ID, t.Node, t.Status))
	}
	sort.Strings(parts)
	return fmt.Sprint(parts)
}

// finish records the end of the execution: completed when err is nil,
// failed otherwise (or stopped in an incident, see incident.go).
func (e *exec) finish(ctx context.Context, runErr error) (*Result, error) {
	// Looked for only past a nil check: the target of errors.As is
	// allocated, and most runs end without an error.
	if runErr != nil {
		if inc := (*incidentError)(nil); errors.As(runErr, &inc) {
			return e.incident(ctx, inc)
		}
	}
	graded, scored := e.finishGrade(ctx, &runErr)
	status, msg := store.StatusCompleted, ""
	if runErr != nil {
		status, msg = store.StatusFailed, runErr.Error()
	}
	ctx = context.WithoutCancel(ctx)
	root := e.rootSpan(status, msg)
	var spans []store.Span
	if e.spansPassed() {
		// The store keeps no part of them (see spansPassed): the
		// run's array for numbered spans serves.
		spans = append(append(e.spanBuf[:0], root), scored...)
		e.spanBuf = nil // taken
	} else {
		spans = append([]store.Span{root}, scored...)
	}
	if f, ok := e.r.cfg.Journal.(finisher); ok {
		// The last checkpoint, the execution's status and the task's are
		// one write.
		var c *store.Checkpoint
		var err error
		if _, reuse := e.r.cfg.Journal.(*store.Store); reuse {
			// Keeps no part of it either (see checkpointLocked).
			c = &e.cp
			err = e.fillCheckpoint(c, e.stateBuf)
		} else {
			c, err = e.checkpointRecord()
		}
		if err != nil {
			return nil, err
		}
		ended := e.r.cfg.Clock()
		if err := f.FinishExecution(ctx, c, func(ex *store.Execution) { e.ended(ex, status, msg, ended) }, status, spans...); err != nil {
			return nil, err
		}
		if e.r.cfg.OnSpans != nil {
			e.r.cfg.OnSpans(spans)
		}
		res := e.resultLast(status, msg)
		res.Graded = graded
		return res, nil
	}
	if ce, ok := e.r.cfg.Journal.(checkpointExecutioner); ok {
		// The last checkpoint and the execution's status are one write;
		// the task's status follows, as in setStatus.
		c, err := e.checkpointRecord()
		if err != nil {
			return nil, err
		}
		ended := e.r.cfg.Clock()
		if err := ce.CheckpointExecution(ctx, c, func(ex *store.Execution) { e.ended(ex, status, msg, ended) }, spans...); err != nil {
			return nil, err
		}
		if e.r.cfg.OnSpans != nil {
			e.r.cfg.OnSpans(spans)
		}
		failpoint.Hit(failpoint.StatusExecution)
		if err := e.r.cfg.Journal.SetTaskStatus(ctx, e.task.ID, status); err != nil {
			return nil, err
		}
		res := e.resultLast(status, msg)
		res.Graded = graded
		return res, nil
	}
	if err := e.checkpoint(ctx, spans...); err != nil {
		return nil, err
	}
	if err := e.setStatus(ctx, status, msg); err != nil {
		return nil, err
	}
	res := e.resultLast(status, msg)
	res.Graded = graded
	return res, nil
}

// finisher is a Journal that commits a run's last checkpoint, its
// execution's end and its task's status in one transaction
// (*store.Store does).
type finisher interface {
	FinishExecution(ctx context.Context, c *store.Checkpoint, update func(*store.Execution), st store.Status, spans ...store.Span) error
}

// checkpointExecutioner is a Journal that commits a checkpoint and its
// execution's new status in one transaction (*store.Store does).
type checkpointExecutioner interface {
	CheckpointExecution(ctx context.Context, c *store.Checkpoint, update func(*store.Execution), spans ...store.Span) error
}

// ended records the end of a run on its execution.
func (e *exec) ended(ex *store.Execution, st store.Status, msg string, at time.Time) {
	ex.Status, ex.Error = st, msg
	ex.Ended = at
	ex.Trace = e.st.Trace
}

func (e *exec) rootSpan(status store.Status, msg string) store.Span {
	sp := store.Span{Task: e.task.ID, Execution: e.id, Seq: 1, TraceID: e.traceID, SpanID: e.spanID(1),
		Name: e.r.runName, Kind: store.SpanInternal, Start: e.st.Started, End: e.r.cfg.Clock(),
		Attributes: store.Attributes{
			"sextant.pipeline":         store.String(e.r.cfg.Pipeline.Name),
			"sextant.task":             store.String(e.task.ID),
			"sextant.strategy.version": store.String(e.r.cfg.Strategy.Metadata.Version),
			"sextant.steps":            store.Int(int64(e.st.Steps)),
			"sextant.tokens":           store.Int(int64(e.st.Tokens)),
			"sextant.cost_usd":         store.Float(e.st.CostUSD),
		}}
	if status == store.StatusFailed {
		sp.Status = store.SpanStatus{Code: store.CodeError, Message: msg}
	} else {
		sp.Status = store.SpanStatus{Code: store.CodeOK}
	}
	return sp
}

// waitSetter is a Journal that records what a waiting task waits for
// (*store.Store does).
type waitSetter interface {
	SetTaskWaiting(ctx context.Context, id string, waits []store.Wait) error
}

// setWaiting marks the execution and the task waiting, with what for.
func (e *exec) setWaiting(ctx context.Context) error {
	ws, ok := e.r.cfg.Journal.(waitSetter)
	if !ok {
		return e.setStatus(ctx, store.StatusWaiting, "")
	}
	s := e.r.cfg.Journal
	ex, err := s.Execution(ctx, e.task.ID, e.id)
	if err != nil {
		return err
	}
	ex.Status, ex.Error = store.StatusWaiting, ""
	if err := s.PutExecution(ctx, ex); err != nil {
		return err
	}
	return ws.SetTaskWaiting(ctx, e.task.ID, e.waits())
}

// sleep, for a run that may sleep (Config.Sleep) and waits only for
// timers and retries — or also for messages and signals when it has an
// Inbox — checkpoints it waiting and sleeps until the next is due or a
// delivery comes. It reports whether it slept.
func (e *exec) sleep(ctx context.Context) (bool, error) {
	if e.r.cfg.Sleep == nil || len(e.st.Waiting) > 0 || e.replaying() {
		return false, nil
	}
	inbox := e.r.cfg.Inbox
	if inbox == nil {
		for _, w := range e.st.Events {
			if !w.Fired && w.Kind != store.WaitTimer && w.Kind != store.WaitRetry {
				return false, nil
			}
		}
	}
	next := e.nextDue()
	if next.IsZero() && inbox == nil {
		return false, nil
	}
	if _, err := e.wait(ctx); err != nil {
		return false, err
	}
	failpoint.Hit(failpoint.WaitSleep)
	for {
		in, err := e.sleepUntil(ctx, next)
		if err != nil {
			return false, err
		}
		if in != nil {
			e.syncWaits()
			if len(e.match(in.Delivery)) == 0 {
				in.Done <- &NoWaiterError{Task: e.task.ID, Kind: in.Delivery.Kind, Name: in.Delivery.Name, Key: in.Delivery.Key, Waits: e.waits()}
				continue // still waiting, for the same things
			}
		}
		if err := e.setStatus(ctx, store.StatusRunning, ""); err != nil {
			if in != nil {
				in.Done <- err
			}
			return false, err
		}
		if in != nil {
			if err := e.accept(ctx, *in); err != nil {
				return false, err
			}
		}
		return true, nil
	}
}

// sleepUntil sleeps until next (never, when zero) or until a delivery
// comes in the inbox, which it returns.
func (e *exec) sleepUntil(ctx context.Context, next time.Time) (*Inbound, error) {
	inbox := e.r.cfg.Inbox
	if next.IsZero() {
		select {
		case in := <-inbox:
			return &in, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if inbox == nil {
		return nil, e.r.cfg.Sleep(ctx, next.Sub(e.r.cfg.Clock()))
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.r.cfg.Sleep(sctx, next.Sub(e.r.cfg.Clock())) }()
	select {
	case err := <-done:
		return nil, err
	case in := <-inbox:
		cancel()
		<-done
		return &in, nil
	}
}

func (e *exec) setStatus(ctx context.Context, st store.Status, msg string) error {
	s := e.r.cfg.Journal
	ex, err := s.Execution(ctx, e.task.ID, e.id)
	if err != nil {
		return err
	}
	ex.Status, ex.Error = st, msg
	if st == store.StatusCompleted || st == store.StatusFailed {
		ex.Ended = e.r.cfg.Clock()
		ex.Trace = e.st.Trace
	}
	if err := s.PutExecution(ctx, ex); err != nil {
		return err
	}
	failpoint.Hit(failpoint.StatusExecution)
	return s.SetTaskStatus(ctx, e.task.ID, st)
}

func (e *exec) result(st store.Status, msg string) *Result {
	return e.resultWith(st, msg, e.output())
}

// resultWith is result with output out.
func (e *exec) resultWith(st store.Status, msg string, out map[string]any) *Result {
	res := &Result{Task: e.task.ID, Execution: e.id, Status: st, Error: msg, Steps: e.st.Steps, Tokens: e.st.Tokens,
		CostUSD: e.st.CostUSD, Violations: e.st.Violations, Confirmations: e.st.Confirmations, Actions: e.st.Actions,
		Output: out, Cited: e.st.Cited}
	var ids []string
	for id := range e.st.Waiting {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		node := e.tokenNode(id)
		res.Waiting = append(res.Waiting, Question{Node: node, Question: e.st.Waiting[id], Options: e.options(node)})
	}
	if st == store.StatusWaiting {
		res.Waits = e.waits()
	}
	return res
}

// resultLast is result for the run's end (finish, past its last
// checkpoint): when the vars map is the run's own and nothing else can
// read it (varsMine's conditions), the result's output is that map
// itself, "action" set in it, rather than a copy: nothing reads the
// run's vars after its end.
func (e *exec) resultLast(st store.Status, msg string) *Result {
	vars := e.st.Nav.Env.Vars
	if e.r.copyVars || e.ownVars == nil || !sameMap(e.ownVars, vars) || len(e.flights) > 0 || len(e.queue) > 0 ||
		e.next != nil || len(e.st.Done) > 0 {
		return e.result(st, msg)
	}
	e.ownVars = nil // given away
	setAction(vars, e.st.Actions)
	return e.resultWith(st, msg, vars)
}

// output is what [score] sees as `output`: the run's variables, plus
// "action" — the last action actually executed, or "none".
func (e *exec) output() map[string]any {
	out := make(map[string]any, len(e.st.Nav.Env.Vars)+1)
	for k, v := range e.st.Nav.Env.Vars {
		out[k] = v
	}
	setAction(out, e.st.Actions)
	return out
}

// setAction sets out["action"] to the last action actually executed, or
// "none".
func setAction(out map[string]any, actions []actionRecord) {
	out["action"] = "none"
	for _, a := range actions {
		if a.Decision == "executed" {
			out["action"] = a.Action
		}
	}
}

// usd prints an amount exactly as far as it goes, no fixed rounding that
// would show a limit of $0.000001 as 0.0000.
func usd(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// TraceOf is the fidelity trace of spans, in sequence order: "step NODE"
// for each step, "call HASH12" for each provider call (its canonical
// request hash). A replay reproduces a run when the traces are equal.
func TraceOf(spans []store.Span) []string { return appendTrace(nil, spans, nil) }

// appendTrace appends the fidelity trace of spans (TraceOf) to out. A
// call's entry is written into arena, when given (the run's text arena).
func appendTrace(out []string, spans []store.Span, arena *textArena) []string {
	sorted := spans
	for i := 1; i < len(spans); i++ {
		if spans[i].Seq < spans[i-1].Seq {
			sorted = append([]store.Span(nil), spans...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
			break
		}
	}
	for _, sp := range sorted {
		switch {
		case strings.HasPrefix(sp.Name, "step "):
			out = append(out, sp.Name)
		case sp.Kind == store.SpanClient && !sp.Attr(AttrScore).Bool():
			h := sp.Attr("sextant.request_hash").Str()
			if len(h) > 12 {
				h = h[:12]
			}
			if arena == nil {
				out = append(out, "call "+h)
				break
			}
			b, start := arena.room(len("call ") + len(h))
			b.WriteString("call ")
			b.WriteString(h)
			out = append(out, arena.done(start))
		}
	}
	return out
}

// navState is the state a navigator call sees: the run's, with the run's
// clock (the recorded one in replay) as Env.Now, so that FEEL's today()
// and now() are deterministic. The clock is not part of the checkpoint.
func (e *exec) navState() sdk.State {
	st := e.st.Nav
	st.Env.Now = e.r.cfg.Clock()
	return st
}
