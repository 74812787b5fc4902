package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Status is the state of a task or an execution.
type Status string

// The statuses a task or execution can be in.
const (
	StatusRunning   Status = "running"
	StatusWaiting   Status = "waiting" // paused at a human step
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	// StatusCancelled: a person (sextant cancel, the API) or a signal
	// ended the run; Task.Cancelled says who and why.
	StatusCancelled Status = "cancelled"
	// StatusIncident: the run stopped where it cannot go on without a
	// person (sextant retry); Task.Incident says where and why.
	StatusIncident Status = "incident"
	// StatusInterrupted is never stored: it is how a running task whose
	// owner process is gone reads (see Lease). sextant resume continues it.
	StatusInterrupted Status = "interrupted"
)

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusRunning, StatusWaiting, StatusCompleted, StatusFailed, StatusCancelled, StatusIncident, StatusInterrupted:
		return true
	}
	return false
}

// Ended reports whether s is final: nothing continues a task in it.
func (s Status) Ended() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// ParseStatus checks a status given by a user (for example `sextant runs --status`).
func ParseStatus(s string) (Status, error) {
	if st := Status(s); st.Valid() {
		return st, nil
	}
	return "", fmt.Errorf("unknown status %q (want running, waiting, completed, failed, cancelled, incident or interrupted)", s)
}

// StrategyRef names the strategy version a task or execution ran under.
type StrategyRef struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	Hash    string `json:"hash,omitempty"` // sha256 of the strategy file, hex
}

// Task is one unit of work: its input and, once known, its ground truth.
// A task is created by `sextant run` or by an import and owns its
// executions, spans, rewards and checkpoints.
type Task struct {
	ID       string          `json:"id"`
	Pipeline string          `json:"pipeline"`
	Input    json.RawMessage `json:"input,omitempty"`
	Truth    json.RawMessage `json:"truth,omitempty"`
	Tags     []string        `json:"tags,omitempty"`
	Status   Status          `json:"status"`
	Created  time.Time       `json:"created"`
	Strategy StrategyRef     `json:"strategy,omitzero"`
	// Routine is the hex sha256 of the routine the task ran, and Rules
	// that of each scripted provider's rules file, by provider block:
	// replay tells a file changed since the recording from a run that
	// diverged by them. Tasks recorded before they were kept have none.
	Routine string            `json:"routine_hash,omitempty"`
	Rules   map[string]string `json:"rules_hashes,omitempty"`
	// Start is the start event the run began at when not the routine's
	// default one (a BPMN message start event: `sextant run --message`).
	Start string `json:"start,omitempty"`
	// Waits lists what a waiting task waits for (empty in any other
	// status), so that listing tasks and broadcasting a signal need not
	// decode checkpoints.
	Waits []Wait `json:"waits,omitempty"`
	// Owner is the lease of the process running the task (running only):
	// a running task whose owner is gone reads as interrupted.
	Owner *Lease `json:"owner,omitempty"`
	// Incident is where and why a task in status incident stopped.
	Incident *Incident `json:"incident,omitempty"`
	// Cancelled says who cancelled a cancelled task, and why.
	Cancelled *Cancellation `json:"cancelled,omitempty"`
}

// The kinds of Wait.
const (
	WaitHuman   = "human"   // a person's answer (sextant resume --set)
	WaitTimer   = "timer"   // a timer event, due at Due
	WaitRetry   = "retry"   // a step's next attempt, due at Due
	WaitMessage = "message" // a message named Name (sextant send)
	WaitSignal  = "signal"  // a signal named Name (sextant signal)
	WaitEvent   = "event"   // another event the navigator fires, by its node id
)

// Wait is one thing a waiting task waits for.
type Wait struct {
	Kind string `json:"kind"`
	// Node is where the token waits; Event is the event node that fires
	// (the node itself for a catch event, a boundary event, or an event
	// after an event-based gateway).
	Node  string `json:"node"`
	Event string `json:"event,omitempty"`
	// Token is the waiting token's id ("token_id": a key named "token"
	// would be redacted as a secret).
	Token string `json:"token_id,omitempty"`
	// Due is when a timer or retry fires: absolute, so that a restart
	// never restarts the timer.
	Due time.Time `json:"due,omitzero"`
	// Name is the message or signal name; Correlation the message's
	// correlation key (the task id).
	Name        string `json:"name,omitempty"`
	Correlation string `json:"correlation,omitempty"`
	// Question is what a person is asked (WaitHuman).
	Question string `json:"question,omitempty"`
	// Options are the answers the person may give (WaitHuman), as the
	// step's options list them; none means any answer.
	Options []string `json:"options,omitempty"`
	// Attempt is the attempt a retry waits to run.
	Attempt int `json:"attempt,omitempty"`
	// Error says why a timer cannot be scheduled (a bad definition).
	Error string `json:"error,omitempty"`
	// Fired marks a non-interrupting event that fired while its token
	// stays: it does not fire again.
	Fired bool `json:"fired,omitempty"`
	// Fires counts how often a cycle timer (timeCycle R3/PT10M) has
	// fired; Due is then its next repetition.
	Fires int `json:"fires,omitempty"`
}

// String says what w waits for, in one line.
func (w Wait) String() string {
	switch w.Kind {
	case WaitHuman:
		return fmt.Sprintf("answer at %s: %s", w.Node, w.Question)
	case WaitTimer:
		if w.Error != "" {
			return fmt.Sprintf("timer %s at %s: %s", w.Event, w.Node, w.Error)
		}
		if w.Fires > 0 {
			return fmt.Sprintf("timer %s at %s due %s (fired %d)", w.Event, w.Node, w.Due.UTC().Format(time.RFC3339Nano), w.Fires)
		}
		return fmt.Sprintf("timer %s at %s due %s", w.Event, w.Node, w.Due.UTC().Format(time.RFC3339Nano))
	case WaitRetry:
		return fmt.Sprintf("retry %d of %s due %s", w.Attempt, w.Node, w.Due.UTC().Format(time.RFC3339Nano))
	case WaitMessage:
		if w.Error != "" {
			return fmt.Sprintf("message %q at %s: %s", w.Name, w.Event, w.Error)
		}
		return fmt.Sprintf("message %q (correlation %s) at %s", w.Name, w.Correlation, w.Event)
	case WaitSignal:
		return fmt.Sprintf("signal %q at %s", w.Name, w.Event)
	}
	return fmt.Sprintf("event %s at %s", w.Event, w.Node)
}

// Execution is one attempt at a task under one strategy version. A task
// has one execution per live run or replay of it.
type Execution struct {
	Task     string      `json:"task"`
	ID       string      `json:"id"`
	Strategy StrategyRef `json:"strategy,omitzero"`
	Mode     string      `json:"mode,omitempty"` // live | replay
	Status   Status      `json:"status"`
	TraceID  string      `json:"trace_id"` // 32 hex digits; every span of the execution shares it
	Started  time.Time   `json:"started"`
	Ended    time.Time   `json:"ended,omitzero"`
	Error    string      `json:"error,omitempty"`
	// Trace is the execution's step and call sequence ("step NODE",
	// "call HASH12"), written when it ends: replay compares against it
	// without reading the spans.
	Trace []string `json:"trace,omitempty"`
}

// SpanKind is the OpenTelemetry span kind.
type SpanKind string

// The OpenTelemetry span kinds. The empty kind means internal.
const (
	SpanInternal SpanKind = "internal"
	SpanServer   SpanKind = "server"
	SpanClient   SpanKind = "client" // provider calls
	SpanProducer SpanKind = "producer"
	SpanConsumer SpanKind = "consumer"
)

// StatusCode is the OpenTelemetry span status code.
type StatusCode string

// The OpenTelemetry status codes. The empty code means unset.
const (
	CodeUnset StatusCode = "unset"
	CodeOK    StatusCode = "ok"
	CodeError StatusCode = "error"
)

// SpanStatus is a span's outcome.
type SpanStatus struct {
	Code    StatusCode `json:"code,omitempty"`
	Message string     `json:"message,omitempty"`
}

// Link points from a span to another span, possibly in another trace
// (a replayed span links to the recorded span it reproduces).
type Link struct {
	TraceID    string     `json:"trace_id"`
	SpanID     string     `json:"span_id"`
	Attributes Attributes `json:"attributes,omitempty"`
}

// Span is one timed operation inside an execution, in OpenTelemetry's shape.
//
// Seq orders the spans of one execution; it is assigned by the writer (the
// run engine numbers them as it goes) or by the store when zero, and never
// depends on clocks. Writing a span with an existing (task, execution,
// seq) replaces it, so re-writing a step's spans after a resume is safe.
type Span struct {
	Task         string     `json:"task"`
	Execution    string     `json:"execution"`
	Seq          uint64     `json:"seq"`
	TraceID      string     `json:"trace_id"`
	SpanID       string     `json:"span_id"`
	ParentSpanID string     `json:"parent_span_id,omitempty"`
	Name         string     `json:"name"`
	Kind         SpanKind   `json:"kind,omitempty"`
	Start        time.Time  `json:"start"`
	End          time.Time  `json:"end"`
	Attributes   Attributes `json:"attributes,omitempty"`
	Status       SpanStatus `json:"status,omitzero"`
	Links        []Link     `json:"links,omitempty"`
	// Call holds a provider call's attributes as fields, beside those of
	// Attributes (a span made in this process; one read from the store
	// has them all in Attributes). Read attributes through Attr,
	// LookupAttr, Attrs or AllAttributes, which see both.
	Call *CallAttributes `json:"-"`
}

// Reward is feedback on a task, optionally aimed at one span of it.
type Reward struct {
	Task      string `json:"task"`
	Seq       uint64 `json:"seq"` // assigned by the store, per task
	Execution string `json:"execution,omitempty"`
	SpanID    string `json:"span_id,omitempty"`
	// Dimension names what the reward measures (helpfulness, safety, …);
	// empty is the unnamed dimension, the one replay scores success by and
	// the task summary counts. See ValidDimension.
	Dimension string    `json:"dimension,omitempty"`
	Value     float64   `json:"value"`
	Tags      []string  `json:"tags,omitempty"`
	Note      string    `json:"note,omitempty"`
	Created   time.Time `json:"created"`
}

// RecordingKind says what a recording answers.
type RecordingKind string

// The recording kinds.
const (
	RecordChat  RecordingKind = "chat"  // a provider call: request is an sdk.ChatRequest
	RecordHuman RecordingKind = "human" // an answer given at a human step
)

// Recording is an outside answer kept for replay: a provider call or a
// human answer, keyed by the canonical hash of what was asked (see ChatKey
// and HumanKey).
type Recording struct {
	Hash     string          `json:"hash"`
	Kind     RecordingKind   `json:"kind"`
	Provider string          `json:"provider,omitempty"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
	Usage    sdk.Usage       `json:"usage,omitzero"`
	Latency  time.Duration   `json:"latency_ns,omitempty"`
	Task     string          `json:"task,omitempty"` // the task that recorded it first
	Created  time.Time       `json:"created"`
}

// Checkpoint is the latest run state of one execution, committed after
// every completed step. State is opaque to the store (apart from
// redaction, see Redactor).
type Checkpoint struct {
	Task      string    `json:"task"`
	Execution string    `json:"execution"`
	Step      uint64    `json:"step"` // completed steps so far
	State     []byte    `json:"state"`
	Updated   time.Time `json:"updated"`
}

// StrategyRecord is the store's entry for one promoted strategy version.
// It is written once; the strategy file itself lives in the repository.
type StrategyRecord struct {
	Name     string          `json:"name"`
	Version  string          `json:"version"`
	Parent   string          `json:"parent,omitempty"` // parent version
	Hash     string          `json:"hash"`             // sha256 of the file, hex
	Author   string          `json:"author,omitempty"`
	Created  time.Time       `json:"created"`
	Evidence json.RawMessage `json:"evidence,omitempty"` // the comparison and gate verdicts that justified it
}

// Query selects tasks for listing and export. Zero fields match anything.
type Query struct {
	Pipeline string
	Status   Status
	Tag      string
	// RewardTag selects tasks with a reward tagged so (sextant feedback --tag).
	RewardTag string
	// Since and Until bound the tasks' created time (both inclusive).
	Since, Until time.Time
	// After is a cursor from TaskPage: list the tasks after it.
	After string
	// Match, when set, is a last filter: a task is listed only if it
	// returns true.
	Match func(*Task) bool
	Limit int // 0 means no limit
}

// Tree is one task with everything beneath it, as `sextant show` prints it.
type Tree struct {
	Task       Task            `json:"task"`
	Executions []ExecutionTree `json:"executions"`
	Rewards    []Reward        `json:"rewards,omitempty"`
	Recordings []string        `json:"recordings,omitempty"` // hashes of the recordings the task's runs made or used
}

// ExecutionTree is one execution with its spans in sequence order and its
// latest checkpoint, if any.
type ExecutionTree struct {
	Execution  Execution   `json:"execution"`
	Spans      []Span      `json:"spans"`
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
}

// isZero reports whether q selects every task.
func (q Query) isZero() bool {
	return q.Pipeline == "" && q.Status == "" && q.Tag == "" && q.RewardTag == "" &&
		q.Since.IsZero() && q.Until.IsZero() && q.After == "" && q.Match == nil && q.Limit == 0
}
