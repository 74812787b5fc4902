package chain

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/sextant-dev/sextant/navigators/internal/routines"
	"github.com/sextant-dev/sextant/sdk"
)

func init() { sdk.Register(New()) }

// Version is the navigator's own version.
const Version = "0.1.0"

// Navigator is the chain navigator. Create one with New; it is safe for
// concurrent use.
type Navigator struct {
	routines routines.Cache[*routine]
}

var _ sdk.Navigator = (*Navigator)(nil)

// New returns a chain navigator with no routine loaded.
func New() *Navigator { return &Navigator{} }

// Describe implements sdk.Plugin.
func (*Navigator) Describe() sdk.Info {
	return sdk.Info{Name: "chain", Kind: sdk.KindNavigator, Version: Version, API: sdk.APIVersion,
		Description: "walks a TOML chain of sequential steps with checked inputs and outputs, skip_if and sub-chains"}
}

// OutputBlind implements sdk.OutputBlind: a chain moves on by an
// outcome's status (and error) alone, never by its output, so a wire
// transport need not decode it.
func (*Navigator) OutputBlind() bool { return true }

var _ sdk.OutputBlind = (*Navigator)(nil)

// Load implements sdk.Navigator. A routine is parsed once per content hash.
func (n *Navigator) Load(_ context.Context, req *sdk.LoadRequest) (*sdk.Routine, error) {
	r, err := n.routines.Load(req.Routine, func(hash string) (*routine, error) {
		file := req.Name
		if file == "" {
			file = "chain.toml"
		}
		r, err := parse(file, req.Routine)
		if err != nil {
			return nil, err
		}
		r.summary.Hash = hash
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	out := r.summary
	return &out, nil
}

func (n *Navigator) routine(hash string) (*routine, error) {
	return n.routines.Get("chain", hash)
}

// Start implements sdk.Navigator: it checks the chain's inputs and enters
// the first step that is not skipped.
func (n *Navigator) Start(_ context.Context, req *sdk.StartRequest) (*sdk.Decision, error) {
	r, err := n.routine(req.State.Routine)
	if err != nil {
		return nil, err
	}
	if req.Trigger != "" {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "chain %q: no start event %q (a chain has none)", r.summary.ID, req.Trigger)
	}
	var missing []string
	for _, in := range r.top.inputs {
		_, inInput := req.State.Env.Input[in]
		_, inVars := req.State.Env.Vars[in]
		if !inInput && !inVars {
			missing = append(missing, strconv.Quote(in))
		}
	}
	if len(missing) > 0 {
		return nil, sdk.Errorf(sdk.CodeInvalid, "chain %q: missing input %s (in neither input nor vars)", r.summary.ID, strings.Join(missing, ", "))
	}
	w := newWalk(r, &req.State)
	w.from(r.top, 0, "")
	return w.decision(), nil
}

// Next implements sdk.Navigator.
func (n *Navigator) Next(_ context.Context, req *sdk.NextRequest) (*sdk.Decision, error) {
	r, err := n.routine(req.State.Routine)
	if err != nil {
		return nil, err
	}
	var tok *sdk.Token
	for k := range req.State.Tokens {
		if req.State.Tokens[k].ID == req.Token {
			tok = &req.State.Tokens[k]
			break
		}
	}
	if tok == nil {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "chain %q: no token %q", r.summary.ID, req.Token)
	}
	s, ok := r.byID[tok.Node]
	if !ok || s.sub != nil || tok.Status != sdk.Ready {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "chain %q: token %q (%s at %q) is not at a step", r.summary.ID, tok.ID, tok.Status, tok.Node)
	}
	w := newWalk(r, &req.State)
	w.remove[0] = tok.ID
	w.d.Remove = w.remove[:1:1]
	switch req.Outcome.Status {
	case sdk.OK, sdk.Skipped:
		w.trace(sdk.Exit, s.id)
		w.from(s.owner, s.index+1, tok.Scope)
	case sdk.Failed:
		w.trace(sdk.Exit, s.id)
		msg := fmt.Sprintf("step %q failed", s.id)
		if req.Outcome.Error != "" {
			msg += ": " + req.Outcome.Error
		}
		w.d.Fault = &sdk.Fault{Node: s.id, Code: "step_failed", Message: msg}
	default:
		w.decision() // lets go of the request
		return nil, sdk.Errorf(sdk.CodeBadRequest, "chain %q: step %q: unknown outcome status %q", r.summary.ID, s.id, req.Outcome.Status)
	}
	return w.decision(), nil
}

// Boundary implements sdk.Navigator. Chain steps have no boundary events.
func (n *Navigator) Boundary(_ context.Context, req *sdk.BoundaryRequest) (*sdk.Decision, error) {
	r, err := n.routine(req.State.Routine)
	if err != nil {
		return nil, err
	}
	return nil, sdk.Errorf(sdk.CodeBadRequest, "chain %q: event %q: chain steps have no boundary events", r.summary.ID, req.Event)
}

// IO implements sdk.Navigator.
func (n *Navigator) IO(_ context.Context, req *sdk.IORequest) (*sdk.NodeIO, error) {
	r, err := n.routine(req.Routine)
	if err != nil {
		return nil, err
	}
	s, ok := r.byID[req.Node]
	if !ok {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "chain %q: no step %q", r.summary.ID, req.Node)
	}
	return &sdk.NodeIO{Inputs: s.inputs, Outputs: s.outputs}, nil
}

// walk is one navigator call in progress. It holds the Decision it
// builds, with room for what a call usually adds (a token or two, a few
// trace events), so that a call makes one allocation where it made six:
// in a wasm guest each costs about as much as the walk itself.
type walk struct {
	r   *routine
	st  *sdk.State
	d   *sdk.Decision
	env map[string]any

	dec    sdk.Decision
	remove [1]string
	add    [2]sdk.Token
	traces [4]sdk.Event
}

func newWalk(r *routine, st *sdk.State) *walk {
	w := takeWalk()
	w.r, w.st = r, st
	w.d = &w.dec
	w.dec.Seq = st.Seq
	return w
}

// walksPerBlock is how many walks takeWalk allocates at once.
const walksPerBlock = 16

// walkBlock is walks allocated together; next counts those taken.
type walkBlock struct {
	next  atomic.Int32
	walks [walksPerBlock]walk
}

// walks is the block new walks are taken from.
var walks atomic.Pointer[walkBlock]

// takeWalk is a zero walk, taken from the current block of them: calls
// (of any instance, from any goroutine) share one allocation per
// walksPerBlock walks. A walk is taken once and never handed out again,
// so the Decision and the token room the host holds are its own, as if
// allocated alone; a block lives while any of its walks is held, which
// holds no request once its call returns (decision).
func takeWalk() *walk {
	for {
		b := walks.Load()
		if b != nil {
			if i := b.next.Add(1) - 1; i < walksPerBlock {
				return &b.walks[i]
			}
		}
		nb := new(walkBlock)
		nb.next.Store(1)
		if walks.CompareAndSwap(b, nb) {
			return &nb.walks[0]
		}
	}
}

// decision is the walk's Decision, with the walk's token room reserved
// for the state Apply returns: a step of a top-level chain removes its
// token and adds the next one, so the applied state is d.Add itself and
// Apply allocates nothing (Apply falls back to allocating whenever the
// state keeps tokens, such as a sub-chain's scope). The walk lets go of
// the request's state: what the host holds of the walk after the call
// (the Decision, the tokens) must not hold the host's request, nor, in
// a block of walks, another run's.
func (w *walk) decision() *sdk.Decision {
	if len(w.d.Add) > 0 {
		w.d.ReserveApply(w.add[:])
	}
	w.st, w.env = nil, nil
	return w.d
}

// from continues in chain c at step k, inside the scope token scope ("" at
// the top), until a step needs the host or the chain ends.
func (w *walk) from(c *chain, k int, scope string) {
	for {
		if k >= len(c.steps) {
			if c.parent == nil {
				w.d.Complete = true
				return
			}
			parentScope := w.leave(scope)
			w.trace(sdk.Exit, c.parent.id)
			c, k, scope = c.parent.owner, c.parent.index+1, parentScope
			continue
		}
		s := c.steps[k]
		if s.skipIf != nil {
			skip, err := w.eval(s.skipIf)
			if err != nil {
				msg, _, _ := strings.Cut(err.Error(), "\n")
				w.d.Fault = &sdk.Fault{Node: s.id, Code: "expression", Message: fmt.Sprintf("step %q: skip_if: %s", s.id, msg)}
				return
			}
			if skip {
				k++
				continue
			}
		}
		if s.sub != nil {
			scope = w.token(s, sdk.Scope, scope)
			c, k = s.sub, 0
			continue
		}
		w.token(s, sdk.Ready, scope)
		return
	}
}

func (w *walk) token(s *step, status sdk.TokenStatus, scope string) string {
	w.d.Seq++
	id := tokenID(w.d.Seq)
	if w.d.Add == nil {
		w.d.Add = w.add[:0]
	}
	w.d.Add = append(w.d.Add, sdk.Token{ID: id, Node: s.id, Status: status, Scope: scope})
	w.trace(sdk.Enter, s.id)
	return id
}

// tokenIDs holds the ids of the first tokens of an instance, "t0" to
// "t127": a walk takes its new token's id from here instead of building
// it, which in a wasm guest saves an allocation per call (about as much
// as the walk's own work).
var tokenIDs = func() (ids [128]string) {
	for i := range ids {
		ids[i] = "t" + strconv.Itoa(i)
	}
	return ids
}()

// tokenID is "t" and seq.
func tokenID(seq int64) string {
	if seq >= 0 && seq < int64(len(tokenIDs)) {
		return tokenIDs[seq]
	}
	return "t" + strconv.FormatInt(seq, 10)
}

// leave removes scope token id and returns its own scope. A scope token
// added by this same Decision is dropped from Add, since Decision.Apply
// removes before it adds.
func (w *walk) leave(id string) string {
	for k, t := range w.d.Add {
		if t.ID == id {
			w.d.Add = append(w.d.Add[:k:k], w.d.Add[k+1:]...)
			return t.Scope
		}
	}
	w.d.Remove = append(w.d.Remove, id)
	for _, t := range w.st.Tokens {
		if t.ID == id {
			return t.Scope
		}
	}
	return ""
}

func (w *walk) trace(typ sdk.EventType, node string) {
	if w.d.Trace == nil {
		w.d.Trace = w.traces[:0]
	}
	w.d.Trace = append(w.d.Trace, sdk.Event{Type: typ, Node: node})
}

var empty = map[string]any{}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return empty
	}
	return m
}

func (w *walk) eval(p *vm.Program) (bool, error) {
	if w.env == nil {
		w.env = map[string]any{"input": orEmpty(w.st.Env.Input), "vars": orEmpty(w.st.Env.Vars), "strategy": orEmpty(w.st.Env.Strategy)}
	}
	v, err := expr.Run(p, w.env)
	if err != nil {
		return false, err
	}
	b, _ := v.(bool)
	return b, nil
}
