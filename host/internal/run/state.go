package run

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// runState is what a checkpoint holds: everything needed to continue an
// execution in another process. It is JSON so a checkpoint stays readable
// with any Badger tool.
type runState struct {
	// Pipeline is the pipeline file the run was started from (absolute), so
	// that `sextant resume TASK` needs nothing else.
	Pipeline string    `json:"pipeline"`
	Nav      sdk.State `json:"nav"`
	Steps    int       `json:"steps"`
	// Complete is set when the navigator reports the instance finished.
	Complete      bool    `json:"complete,omitempty"`
	Tokens        int     `json:"tokens"`
	CostUSD       float64 `json:"cost_usd"`
	SpanSeq       uint64  `json:"span_seq"`
	Violations    int     `json:"violations,omitempty"`
	Confirmations int     `json:"confirmations,omitempty"`
	// Approved is set once a person approved something in this run, so an
	// action that needs confirmation after the routine asked is not asked twice.
	Approved bool `json:"approved,omitempty"`
	// Done holds steps that finished but whose outcome the navigator has not
	// seen yet (the rest of their batch was still running). A resumed run
	// never runs them again.
	Done map[string]*stepResult `json:"done,omitempty"`
	// Waiting maps token ids to the question a person must answer.
	Waiting map[string]string `json:"waiting,omitempty"`
	// Events lists the timers, messages, signals and retries the tokens
	// wait for, with absolute due times (see syncWaits).
	Events []store.Wait `json:"events,omitempty"`
	// Released maps a delayed token to the attempt whose delay has passed.
	Released map[string]int `json:"released,omitempty"`
	// Answers counts answers per human node (for recording keys), and
	// deliveries per event node ("event ID").
	Answers map[string]int `json:"answers,omitempty"`
	// Actions lists what action steps decided, in order.
	Actions []actionRecord `json:"actions,omitempty"`
	// Trace is the step and call sequence so far (see TraceOf).
	Trace []string `json:"trace,omitempty"`
	// Cited lists the playbook bullets the run's replies cited (see
	// strategy.Cited), in order of first citation.
	Cited   []string  `json:"cited,omitempty"`
	Started time.Time `json:"started"`
}

// answered adds k to the answers counted for name. Answers and Waiting
// are made by their first entry (Start leaves them nil: most runs have
// none, and the encoded state leaves both out when empty).
func (s *runState) answered(name string, k int) {
	if s.Answers == nil {
		s.Answers = map[string]int{}
	}
	s.Answers[name] += k
}

// wait records that token id waits for a person to answer question.
func (s *runState) wait(id, question string) {
	if s.Waiting == nil {
		s.Waiting = map[string]string{}
	}
	s.Waiting[id] = question
}

// stepResult is one finished step: its outcome for the navigator and the
// spans it produced (numbered when the outcome is handed over).
type stepResult struct {
	Outcome sdk.Outcome  `json:"outcome"`
	Spans   []store.Span `json:"spans,omitempty"`
	Tokens  int          `json:"tokens,omitempty"`
	CostUSD float64      `json:"cost_usd,omitempty"`
	// Err is the step's failure, when it failed.
	Err string `json:"err,omitempty"`
	// Cited are the playbook bullets the step's reply cited.
	Cited []string `json:"cited,omitempty"`
	// Handed marks an outcome handed over once already, kept by an
	// incident to be handed over again on retry (incident.go).
	Handed bool `json:"handed,omitempty"`
	// reusable marks an output map from textOutputs (see releaseOutput).
	reusable bool
}

// actionRecord is what an action step decided and why.
type actionRecord struct {
	Node     string `json:"node"`
	Action   string `json:"action"`
	Decision string `json:"decision"` // executed | blocked | declined | awaiting
	Reason   string `json:"reason"`
}

func decodeState(b []byte) (*runState, error) {
	var s runState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	if s.Done == nil {
		s.Done = map[string]*stepResult{}
	}
	if s.Waiting == nil {
		s.Waiting = map[string]string{}
	}
	if s.Answers == nil {
		s.Answers = map[string]int{}
	}
	return &s, nil
}

// decodeStateOf decodes the checkpointed state of task's execution, ready
// to run on: a checkpoint does not hold the run's input (the task holds
// it, once, however many checkpoints the run writes), so it is decoded
// from task.Input. A checkpoint written before that rule still holds the
// input itself, which is then used.
func decodeStateOf(b []byte, task *store.Task) (*runState, error) {
	s, err := decodeState(b)
	if err != nil {
		return nil, err
	}
	if s.Nav.Env.Vars == nil {
		s.Nav.Env.Vars = map[string]any{}
	}
	if len(s.Nav.Env.Input) == 0 && len(task.Input) > 0 {
		var in map[string]any
		if err := json.Unmarshal(task.Input, &in); err != nil {
			return nil, fmt.Errorf("task input: %w", err)
		}
		s.Nav.Env.Input = in
	}
	if s.Nav.Env.Input == nil {
		s.Nav.Env.Input = map[string]any{}
	}
	return s, nil
}

// Finished is what a finished run left in its last checkpoint: the output
// [score] saw and the playbook bullets its replies cited.
type Finished struct {
	Output map[string]any
	Cited  []string
}

// FinishedOf reads a run's output and citations from its last checkpoint
// (the online adapter learns from them when feedback arrives later).
func FinishedOf(cp *store.Checkpoint) (*Finished, error) {
	st, err := decodeState(cp.State)
	if err != nil {
		return nil, fmt.Errorf("checkpoint of %s/%s: %w", cp.Task, cp.Execution, err)
	}
	e := &exec{st: st}
	return &Finished{Output: e.output(), Cited: st.Cited}, nil
}
