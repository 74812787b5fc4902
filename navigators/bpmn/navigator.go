package bpmn

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sextant-dev/sextant/navigators/dmn"
	"github.com/sextant-dev/sextant/sdk"
)

// Version is the navigator's own version.
const Version = "0.1.0"

// Navigator walks BPMN 2.0 routines. Create one with New; the zero value is
// not usable. It is safe for concurrent use: the only thing it keeps is the
// cache of loaded routines, guarded by a mutex.
//
// The Decisions it returns are read-only: a trace, a lone removed id or a
// lone waiting join may be memory shared with the loaded routine and with
// other answers. Apply them with sdk.Decision.Apply, which copies; never
// write into a Decision's slices.
type Navigator struct {
	mu       sync.RWMutex
	routines map[string]*model
	models   map[string]*dmn.Model // decision files, by dmnKey
	last     atomic.Pointer[model] // the most recently used routine
}

var _ sdk.Navigator = (*Navigator)(nil)

// New returns a BPMN navigator with an empty routine cache.
func New() *Navigator {
	return &Navigator{routines: map[string]*model{}, models: map[string]*dmn.Model{}}
}

func init() { sdk.Register(New()) }

// Describe implements sdk.Plugin.
func (nv *Navigator) Describe() sdk.Info {
	return sdk.Info{
		Name:        "bpmn",
		Kind:        sdk.KindNavigator,
		Version:     Version,
		API:         sdk.APIVersion,
		Description: "Walks BPMN 2.0 diagrams from Camunda Modeler, bpmn.io and Zeebe tooling",
	}
}

// Load parses and validates a BPMN document. An invalid document gives an
// sdk.Invalid error listing every problem with its line.
func (nv *Navigator) Load(ctx context.Context, req *sdk.LoadRequest) (_ *sdk.Routine, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := req.Name
	if name == "" {
		name = "routine.bpmn"
	}
	files, err := nv.decisionFiles(req.Decisions)
	if err != nil {
		return nil, err
	}
	m, err := load(name, req.Routine, files, routineHash(req.Routine, req.Decisions))
	if err != nil {
		return nil, err
	}
	nv.mu.Lock()
	if old, ok := nv.routines[m.hash]; ok {
		m = old
	} else {
		nv.routines[m.hash] = m
	}
	nv.mu.Unlock()
	return m.routine, nil
}

// routine returns the loaded routine with hash.
func (nv *Navigator) routine(hash string) (*model, error) {
	if m := nv.last.Load(); m != nil && m.hash == hash {
		return m, nil
	}
	nv.mu.RLock()
	m := nv.routines[hash]
	nv.mu.RUnlock()
	if m == nil {
		return nil, sdk.Errorf(sdk.CodeInvalid, "bpmn: routine %q is not loaded (call Load with its document first)", shortHash(hash))
	}
	nv.last.Store(m)
	return m, nil
}

// guard turns a panic into an internal error, so that no input can bring
// the host down.
func guard(err *error) {
	if r := recover(); r != nil {
		*err = sdk.Errorf(sdk.CodeInternal, "bpmn: internal error: %v", r)
		if debugPanics {
			panic(r)
		}
	}
}

// Start begins an instance at the main process's none start event, or at
// the start event named by Trigger (any process of the document).
func (nv *Navigator) Start(ctx context.Context, req *sdk.StartRequest) (d *sdk.Decision, err error) {
	defer guard(&err)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m, err := nv.routine(req.State.Routine)
	if err != nil {
		return nil, err
	}
	start, err := m.startNode(req.Trigger)
	if err != nil {
		return nil, err
	}
	r, err := newRun(m, &req.State)
	if err != nil {
		return nil, err
	}
	r.startInstance(start)
	return r.finish(), nil
}

// startNode resolves a start trigger.
func (m *model) startNode(trigger string) (*node, error) {
	if trigger == "" {
		p := m.main
		if len(p.starts) > 0 {
			return p.starts[0], nil
		}
		if len(p.allStarts) == 0 && len(p.implicit) > 0 {
			return p.implicit[0], nil
		}
		return nil, sdk.Errorf(sdk.CodeInvalid, "process %q has no none start event; start it with a trigger: %s", p.id, strings.Join(m.routine.Starts, ", "))
	}
	for _, s := range m.routine.Starts {
		if s == trigger {
			return m.byID[s], nil
		}
	}
	if n := m.byID[trigger]; n != nil {
		return nil, sdk.Errorf(sdk.CodeInvalid, "%s does not start the routine (start events: %s)", n.elem(), strings.Join(m.routine.Starts, ", "))
	}
	return nil, sdk.Errorf(sdk.CodeInvalid, "no element %q in the routine", trigger)
}

// Next reports that a token's node finished, or answers a Choice.
func (nv *Navigator) Next(ctx context.Context, req *sdk.NextRequest) (d *sdk.Decision, err error) {
	defer guard(&err)
	r, t, err := nv.resume(ctx, &req.State, req.Token)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	out := req.Outcome
	switch {
	case t.attr(attrChoice) != nil:
		flows, err := r.chosen(t, out.Flows)
		if err != nil {
			return nil, err
		}
		t.delAttr(attrChoice)
		r.pushN(opChosen, t, nil, flows)
	case t.status == stReady:
		switch out.Status {
		case sdk.OK, sdk.Skipped, "":
			r.activityDone(t, out.Output)
		case sdk.Failed:
			if out.Error != "" {
				if !r.raise(t, evError, out.Error) {
					r.failf(r.node(t), out.Error, "error %q was not caught", out.Error)
				}
			} else {
				r.failf(r.node(t), "", "failed")
			}
		default:
			return nil, sdk.Errorf(sdk.CodeInvalid, "token %s: unknown outcome status %q", r.tid(t), out.Status)
		}
	case t.status == stWaiting && hasString(t.triggers, r.node(t).id):
		if out.Status == sdk.Failed {
			if !r.raise(t, evError, out.Error) {
				r.failf(r.node(t), out.Error, "%s was not caught", describeError(out.Error))
			}
			break
		}
		r.fire(t, r.node(t))
	default:
		return nil, sdk.Errorf(sdk.CodeInvalid, "token %s at %s is %s: Next completes ready tokens and answers choices", r.tid(t), r.node(t).elem(), statusName(t.status))
	}
	return r.finish(), nil
}

// resume rebuilds the run of state st and finds its token id, for Next
// and Boundary. On error there is nothing to release.
func (nv *Navigator) resume(ctx context.Context, st *sdk.State, id string) (*run, *tok, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	m, err := nv.routine(st.Routine)
	if err != nil {
		return nil, nil, err
	}
	r, err := newRun(m, st)
	if err != nil {
		return nil, nil, err
	}
	t := r.find(id)
	if t == nil {
		r.release()
		return nil, nil, sdk.Errorf(sdk.CodeInvalid, "no token %q in the state", id)
	}
	return r, t, nil
}

func statusName(s tokStatus) string {
	if s == stMoving {
		return "moving"
	}
	return string(statuses[s])
}

// chosen validates the flows the host selected for a choice.
func (r *run) chosen(t *tok, ids []string) ([]*flow, error) {
	n := r.node(t)
	if len(ids) == 0 {
		return nil, sdk.Errorf(sdk.CodeInvalid, "%s: choose one of its outgoing flows: %s", n.elem(), flowIDs(n.out))
	}
	if n.k == kExclusive && len(ids) > 1 {
		return nil, sdk.Errorf(sdk.CodeInvalid, "%s: an exclusive gateway takes exactly one flow, got %s", n.elem(), strings.Join(ids, ", "))
	}
	var out []*flow
	for _, id := range ids {
		var f *flow
		for _, o := range n.out {
			if o.id == id {
				f = o
			}
		}
		if f == nil {
			return nil, sdk.Errorf(sdk.CodeInvalid, "%s has no outgoing flow %q (it has %s)", n.elem(), id, flowIDs(n.out))
		}
		dup := false
		for _, o := range out {
			dup = dup || o == f
		}
		if !dup {
			out = append(out, f)
		}
	}
	// Keep document order, whatever order the host listed them in.
	sort.SliceStable(out, func(i, j int) bool { return flowIndex(n, out[i]) < flowIndex(n, out[j]) })
	return out, nil
}

func flowIndex(n *node, f *flow) int {
	for i, o := range n.out {
		if o == f {
			return i
		}
	}
	return -1
}

func flowIDs(fs []*flow) string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.id
	}
	return strings.Join(ids, ", ")
}

// Boundary reports that an event fired for a token: one of its Triggers.
func (nv *Navigator) Boundary(ctx context.Context, req *sdk.BoundaryRequest) (d *sdk.Decision, err error) {
	defer guard(&err)
	r, t, err := nv.resume(ctx, &req.State, req.Token)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	if !hasString(t.triggers, req.Event) {
		return nil, sdk.Errorf(sdk.CodeInvalid, "token %s at %s does not wait for %q (it waits for: %s)", r.tid(t), r.node(t).elem(), req.Event, strings.Join(t.triggers, ", "))
	}
	ev := r.m.byID[req.Event]
	if ev == nil {
		return nil, sdk.Errorf(sdk.CodeInvalid, "no element %q in the routine", req.Event)
	}
	if len(req.Payload) > 0 {
		r.propagate(t, req.Payload)
	}
	r.fire(t, ev)
	return r.finish(), nil
}

// IO names the variables a node reads and writes: its Zeebe or Camunda
// input/output mappings and its multi-instance output collection.
func (nv *Navigator) IO(ctx context.Context, req *sdk.IORequest) (*sdk.NodeIO, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m, err := nv.routine(req.Routine)
	if err != nil {
		return nil, err
	}
	n := m.byID[req.Node]
	if n == nil || n.k == kProcess {
		return nil, sdk.Errorf(sdk.CodeInvalid, "no node %q in routine %s", req.Node, shortHash(req.Routine))
	}
	io := n.io
	return &io, nil
}

// String describes the navigator (for logs).
func (nv *Navigator) String() string {
	nv.mu.RLock()
	defer nv.mu.RUnlock()
	return fmt.Sprintf("bpmn navigator (%d routines)", len(nv.routines))
}

// debugPanics re-raises panics caught by guard (set by tests to see the stack).
var debugPanics = false
