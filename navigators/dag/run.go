package dag

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/sextant-dev/sextant/sdk"
)

// state is a task's (or a task instance's) state, named as in Airflow.
type state uint8

const (
	none state = iota
	running
	success
	failed
	skipped
	upstreamFailed
)

var stateNames = [...]string{none: "none", running: "running", success: "success", failed: "failed",
	skipped: "skipped", upstreamFailed: "upstream_failed"}

func (s state) String() string { return stateNames[s] }

// stateValues holds the state names already boxed, so that encoding a
// state into State.Data does not allocate.
var stateValues = func() (v [len(stateNames)]any) {
	for k, name := range stateNames {
		v[k] = name
	}
	return v
}()

func (s state) finished() bool { return s >= success }

// The keys of State.Data.
const (
	dataTasks     = "tasks"
	dataInstances = "instances"
	dataOutputs   = "outputs"
)

// maxItems bounds a for_each fan-out, as Airflow's max_map_length (whose
// default it takes) does: every instance is a token and an entry in
// State.Data, which travels with every call.
const maxItems = 1024

// The Token.Attrs keys of a for_each instance.
const (
	attrIndex = "index"
	attrItem  = "item"
)

// runState is the decoded State.Data of one instance.
type runState struct {
	task []state
	inst [][]state // per for_each task: instance states; nil until expanded
	out  [][]any   // per for_each task: instance outputs
}

// step is one navigator call in progress.
type step struct {
	r   *routine
	st  *sdk.State
	rs  *runState
	d   *sdk.Decision
	env map[string]any
}

func (r *routine) start(st *sdk.State) (*sdk.Decision, error) {
	n := len(r.tasks)
	s := &step{r: r, st: st, rs: &runState{task: make([]state, n), inst: make([][]state, n), out: make([][]any, n)},
		d: &sdk.Decision{Seq: st.Seq}}
	s.advance()
	return s.finish(), nil
}

func (r *routine) next(st *sdk.State, tokenID string, out sdk.Outcome) (*sdk.Decision, error) {
	var tok *sdk.Token
	for k := range st.Tokens {
		if st.Tokens[k].ID == tokenID {
			tok = &st.Tokens[k]
			break
		}
	}
	if tok == nil {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "dag %q: no token %q", r.summary.ID, tokenID)
	}
	i, ok := r.index[tok.Node]
	if !ok {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "dag %q: token %q is at unknown task %q", r.summary.ID, tokenID, tok.Node)
	}
	t := r.tasks[i]
	var result state
	switch out.Status {
	case sdk.OK:
		result = success
	case sdk.Failed:
		result = failed
	case sdk.Skipped:
		result = skipped
	default:
		return nil, sdk.Errorf(sdk.CodeBadRequest, "dag %q: task %q: unknown outcome status %q", r.summary.ID, t.id, out.Status)
	}
	rs, err := r.decode(st.Data)
	if err != nil {
		return nil, err
	}
	if rs.task[i] != running {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "dag %q: task %q is %s, not running", r.summary.ID, t.id, rs.task[i])
	}

	if result == failed && tok.Attempt < t.retries {
		retry := *tok
		retry.Status = sdk.Ready
		retry.Attempt++
		retry.DelayMS = backoff(t, retry.Attempt).Milliseconds()
		return &sdk.Decision{Add: []sdk.Token{retry}, Seq: st.Seq}, nil
	}

	s := &step{r: r, st: st, rs: rs, d: &sdk.Decision{Seq: st.Seq, Remove: []string{tok.ID}}}
	s.d.Trace = append(s.d.Trace, sdk.Event{Type: sdk.Exit, Node: t.id})
	if t.forEach == nil {
		rs.task[i] = result
	} else {
		k, ok := attrInt(tok.Attrs[attrIndex])
		if !ok || k < 0 || k >= len(rs.inst[i]) {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "dag %q: token %q of for_each task %q has no valid %q attribute", r.summary.ID, tokenID, t.id, attrIndex)
		}
		if rs.inst[i][k] != running {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "dag %q: instance %d of task %q is %s, not running", r.summary.ID, k, t.id, rs.inst[i][k])
		}
		rs.inst[i][k] = result
		if out.Output != nil {
			rs.out[i][k] = out.Output
		}
		s.collect(i)
	}
	s.advance()
	return s.finish(), nil
}

// backoff is the delay before retry number attempt (1 for the first):
// retry_delay doubled for each earlier retry, capped by max_retry_delay.
func backoff(t *task, attempt int) time.Duration {
	d := t.delay
	for n := 1; n < attempt && d < t.maxDelay; n++ {
		if d > math.MaxInt64/2 {
			d = t.maxDelay
			break
		}
		d *= 2
	}
	return min(d, t.maxDelay)
}

// collect finishes for_each task i once all its instances have: its state
// summarises theirs and its outputs are assigned in input order.
func (s *step) collect(i int) {
	var nFailed, nSuccess int
	for _, st := range s.rs.inst[i] {
		switch st {
		case running:
			return
		case failed:
			nFailed++
		case success:
			nSuccess++
		}
	}
	switch {
	case nFailed > 0:
		s.rs.task[i] = failed
	case nSuccess > 0:
		s.rs.task[i] = success
	default:
		s.rs.task[i] = skipped
	}
	s.assign(s.r.tasks[i], s.rs.out[i])
}

// assign sets the outputs of for_each task t from its instances' outputs,
// in input order: each declared output to the list of the instances' values
// for it, or with none declared, the task id to the list of their outputs.
// An empty fan-out assigns empty lists.
func (s *step) assign(t *task, outs []any) {
	if s.d.Set == nil {
		s.d.Set = map[string]any{}
	}
	if len(t.outputs) == 0 {
		list := make([]any, len(outs))
		copy(list, outs)
		s.d.Set[t.id] = list
	} else {
		for _, name := range t.outputs {
			list := make([]any, len(outs))
			for k, o := range outs {
				if m, ok := o.(map[string]any); ok {
					list[k] = m[name]
				}
			}
			s.d.Set[name] = list
		}
	}
	s.env = nil // vars changed
}

// decide applies task i's trigger rule (and the setup constraint) to the
// current states of its upstream task instances.
func (s *step) decide(i int) verdict {
	t := s.r.tasks[i]
	if len(t.deps) == 0 || t.rule == always {
		return run
	}
	hold := false
	if len(t.setups) > 0 {
		v, h := evaluateSetups(s.count(t.setups))
		if v != wait {
			return v
		}
		hold = h
	}
	v := evaluate(t.rule, s.count(t.deps))
	if v == run && hold {
		return wait
	}
	return v
}

func (s *step) count(tasks []int) counts {
	var c counts
	for _, j := range tasks {
		setup := s.r.tasks[j].setup
		if inst := s.rs.inst[j]; inst != nil {
			for _, st := range inst {
				c.add(st, setup)
			}
			continue
		}
		c.add(s.rs.task[j], setup)
	}
	return c
}

// advance decides every undecided task, in topological order so that skip
// and upstream_failed propagate through the whole graph in one pass, and
// starts the tasks that run.
func (s *step) advance() {
	for _, i := range s.r.topo {
		if s.rs.task[i] != none {
			continue
		}
		switch s.decide(i) {
		case skip:
			s.rs.task[i] = skipped
		case upFail:
			s.rs.task[i] = upstreamFailed
		case run:
			if s.activate(i) {
				return // fault
			}
		}
	}
}

// activate runs task i: its condition, its fan-out, its tokens. It reports
// whether the instance faulted.
func (s *step) activate(i int) bool {
	t := s.r.tasks[i]
	if t.when != nil {
		v, err := s.eval(t.when)
		if err != nil {
			s.fault(t, "when", err)
			return true
		}
		if ok, _ := v.(bool); !ok {
			s.rs.task[i] = skipped
			return false
		}
	}
	if t.forEach == nil {
		s.rs.task[i] = running
		s.token(t, nil)
		return false
	}
	v, err := s.eval(t.forEach)
	if err != nil {
		s.fault(t, "for_each", err)
		return true
	}
	items, ok := list(v)
	if !ok {
		s.fault(t, "for_each", fmt.Errorf("want a list, got %T", v))
		return true
	}
	if len(items) > maxItems {
		s.fault(t, "for_each", fmt.Errorf("%d items, more than the limit of %d", len(items), maxItems))
		return true
	}
	if len(items) == 0 {
		s.rs.task[i] = skipped
		s.assign(t, nil)
		return false
	}
	s.rs.task[i] = running
	s.rs.inst[i] = make([]state, len(items))
	s.rs.out[i] = make([]any, len(items))
	for k, item := range items {
		s.rs.inst[i][k] = running
		s.token(t, map[string]any{attrIndex: k, attrItem: item})
	}
	return false
}

func (s *step) token(t *task, attrs map[string]any) {
	s.d.Seq++
	s.d.Add = append(s.d.Add, sdk.Token{ID: "t" + strconv.FormatInt(s.d.Seq, 10), Node: t.id, Status: sdk.Ready, Attrs: attrs})
	s.d.Trace = append(s.d.Trace, sdk.Event{Type: sdk.Enter, Node: t.id})
}

func (s *step) fault(t *task, key string, err error) {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	s.d.Fault = &sdk.Fault{Node: t.id, Code: "expression", Message: fmt.Sprintf("task %q: %s: %s", t.id, key, msg)}
}

func (s *step) eval(p *vm.Program) (any, error) {
	if s.env == nil {
		vars := s.st.Env.Vars
		if len(s.d.Set) > 0 {
			vars = make(map[string]any, len(s.st.Env.Vars)+len(s.d.Set))
			for k, v := range s.st.Env.Vars {
				vars[k] = v
			}
			for k, v := range s.d.Set {
				vars[k] = v
			}
		}
		s.env = map[string]any{"input": orEmpty(s.st.Env.Input), "vars": orEmpty(vars), "strategy": orEmpty(s.st.Env.Strategy)}
	}
	return expr.Run(p, s.env)
}

var empty = map[string]any{}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return empty
	}
	return m
}

// list converts an expression result to a list.
func list(v any) ([]any, bool) {
	switch v := v.(type) {
	case []any:
		return v, true
	case nil:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for k := range out {
		out[k] = rv.Index(k).Interface()
	}
	return out, true
}

// finish ends the call: it encodes the run state and, when nothing is
// running any more, ends the instance.
func (s *step) finish() *sdk.Decision {
	s.d.Data = s.r.encode(s.rs)
	if s.d.Fault != nil {
		return s.d
	}
	for i, t := range s.r.tasks {
		if s.rs.task[i] != none || len(t.deps) < 2 {
			continue
		}
		for _, j := range t.deps {
			if s.rs.task[j].finished() {
				s.d.Waiting = append(s.d.Waiting, t.id)
				break
			}
		}
	}
	for _, st := range s.rs.task {
		if st == running {
			return s.d
		}
	}
	for i, st := range s.rs.task {
		if st == none { // cannot happen: with nothing running every task is decidable
			s.d.Fault = &sdk.Fault{Node: s.r.tasks[i].id, Code: "stuck", Message: fmt.Sprintf("task %q can never be decided", s.r.tasks[i].id)}
			return s.d
		}
	}
	s.d.Waiting = nil
	leaf := -1
	for i, st := range s.rs.task {
		if s.r.leaf[i] && (st == failed || st == upstreamFailed) {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		s.d.Complete = true
		return s.d
	}
	cause := leaf
	for i, st := range s.rs.task {
		if st == failed {
			cause = i
			break
		}
	}
	msg := fmt.Sprintf("task %q failed", s.r.tasks[cause].id)
	if cause != leaf {
		msg += fmt.Sprintf(" (leaf task %q is %s)", s.r.tasks[leaf].id, s.rs.task[leaf])
	}
	s.d.Fault = &sdk.Fault{Node: s.r.tasks[cause].id, Code: "task_failed", Message: msg}
	return s.d
}

// encode writes the run state as State.Data, in plain JSON types so that it
// is the same whether the host keeps it in memory or on the wire.
func (r *routine) encode(rs *runState) map[string]any {
	tasks := make(map[string]any, len(r.tasks))
	var inst, outs map[string]any
	for i, t := range r.tasks {
		if rs.task[i] != none {
			tasks[t.id] = stateValues[rs.task[i]]
		}
		if rs.inst[i] == nil {
			continue
		}
		if inst == nil {
			inst, outs = map[string]any{}, map[string]any{}
		}
		states := make([]any, len(rs.inst[i]))
		for k, st := range rs.inst[i] {
			states[k] = stateValues[st]
		}
		inst[t.id] = states
		outs[t.id] = append([]any(nil), rs.out[i]...)
	}
	data := map[string]any{dataTasks: tasks}
	if inst != nil {
		data[dataInstances] = inst
		data[dataOutputs] = outs
	}
	return data
}

// decode reads State.Data as encode wrote it, in memory or after a JSON
// round trip.
func (r *routine) decode(data map[string]any) (*runState, error) {
	n := len(r.tasks)
	rs := &runState{task: make([]state, n), inst: make([][]state, n), out: make([][]any, n)}
	bad := func(format string, args ...any) error {
		return sdk.Errorf(sdk.CodeBadRequest, "dag %q: corrupt state data: %s", r.summary.ID, fmt.Sprintf(format, args...))
	}
	tasks, _ := data[dataTasks].(map[string]any)
	for id, v := range tasks {
		i, ok := r.index[id]
		if !ok {
			return nil, bad("unknown task %q", id)
		}
		st, ok := parseState(v)
		if !ok {
			return nil, bad("task %q: state %v", id, v)
		}
		rs.task[i] = st
	}
	inst, _ := data[dataInstances].(map[string]any)
	outs, _ := data[dataOutputs].(map[string]any)
	for id, v := range inst {
		i, ok := r.index[id]
		if !ok {
			return nil, bad("unknown task %q", id)
		}
		states, ok := v.([]any)
		if !ok {
			return nil, bad("instances of %q: %T", id, v)
		}
		rs.inst[i] = make([]state, len(states))
		for k, sv := range states {
			st, ok := parseState(sv)
			if !ok {
				return nil, bad("instance %d of %q: state %v", k, id, sv)
			}
			rs.inst[i][k] = st
		}
		rs.out[i] = make([]any, len(states))
		if o, ok := outs[id].([]any); ok {
			copy(rs.out[i], o)
		}
	}
	return rs, nil
}

func parseState(v any) (state, bool) {
	s, _ := v.(string)
	for st, name := range stateNames {
		if name == s && st != int(none) {
			return state(st), true
		}
	}
	return none, false
}

// attrInt reads an integer attribute in any of the forms it takes in
// memory and after a JSON round trip.
func attrInt(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<31 {
			return int(v), true
		}
	case json.Number:
		n, err := v.Int64()
		return int(n), err == nil
	}
	return 0, false
}
