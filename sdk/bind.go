package sdk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
)

// maxBindings bounds the bindings one plugin instance keeps (and one client
// remembers): an evolution binds one strategy per candidate, and a
// long-lived plugin must not grow without end. The oldest goes first.
const maxBindings = 16

// bindings is the plugin side of binding: what navigator.bind stored, and
// the Env each binding holds. It is safe for concurrent use (a process
// plugin serves several host connections).
type bindings struct {
	mu    sync.Mutex
	m     map[string]*binding
	order []string // ids, oldest first
	// inPlace updates a binding's vars in place instead of replacing
	// them. Only for a plugin that answers one call at a time (the wasm
	// guest): a call's Navigator has returned, and keeps nothing of its
	// request (Navigator's contract), before the next call changes them.
	// Copying a run's variables per call was ~1/6 of a bound next there.
	// state then takes no lock either: nothing runs beside it.
	inPlace bool
	// last is the binding the last call found (nil when none), under the
	// id lastID: consecutive calls name the same binding, and finding it
	// again costs a comparison instead of hashing its 32-character id
	// (~1 µs in a wasm guest). bind resets it.
	last   *binding
	lastID string
}

type binding struct {
	routine  string
	strategy map[string]any
	version  uint64
	input    map[string]any
	vars     map[string]any // replaced, never modified in place (unless bindings.inPlace)
}

// bind implements navigator.bind.
func (b *bindings) bind(_ context.Context, r *BindRequest) (*Bound, error) {
	if r.Binding == "" || r.Routine == "" {
		return nil, Errorf(CodeBadRequest, "%s: binding and routine are required", MethodBind)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[r.Binding]; !ok {
		if len(b.order) >= maxBindings {
			delete(b.m, b.order[0])
			b.order = b.order[1:]
		}
		b.order = append(b.order, r.Binding)
	}
	b.m[r.Binding] = &binding{routine: r.Routine, strategy: r.Strategy}
	b.last, b.lastID = nil, ""
	return &Bound{Binding: r.Binding}, nil
}

// state applies bs to its binding and returns the whole State a full
// request would have carried: empty maps are nil, as they are after a
// JSON round trip with omitempty. Vars is shared with the binding (and so
// with other calls): never modified in place, only replaced.
//
// set holds the variables bs sets when they were decoded as a list
// (decoder.pairs; bs.Set is then nil), assigned after bs.Set: either
// way the same assignments, in the order the request lists them.
func (b *bindings) state(bs *BoundState, set []kv) (State, error) {
	if bs.Version == 0 {
		return State{}, Errorf(CodeBadRequest, "bound call: version 0 (want the version the request creates)")
	}
	if b.inPlace { // one call at a time: nothing to lock against
		return b.stateLocked(bs, set)
	}
	b.mu.Lock()
	st, err := b.stateLocked(bs, set)
	b.mu.Unlock() // not deferred: a defer costs ~0.3 µs in a wasm guest, and nothing here panics
	return st, err
}

func (b *bindings) stateLocked(bs *BoundState, set []kv) (State, error) {
	e := b.last
	if e == nil || b.lastID != bs.Binding {
		e = b.m[bs.Binding]
		b.last, b.lastID = e, bs.Binding
	}
	switch {
	case e == nil:
		return State{}, Errorf(CodeUnbound, "binding %s is not held by this plugin instance (restarted or evicted); bind it again", short(bs.Binding))
	case bs.Base == 0:
		e.input = bs.Input
		if b.inPlace && e.vars != nil {
			// The last instance's map, emptied: a run's variables then
			// fill a map already grown to a run's size.
			clear(e.vars)
			for k, v := range bs.Set {
				e.vars[k] = v
			}
			for _, p := range set {
				e.vars[p.k] = p.v
			}
			break
		}
		if len(set) == 0 {
			e.vars = bs.Set
			break
		}
		vars := e.vars
		if !b.inPlace || vars == nil {
			vars = make(map[string]any, len(bs.Set)+len(set))
		} else {
			clear(vars)
		}
		for k, v := range bs.Set {
			vars[k] = v
		}
		for _, p := range set {
			vars[p.k] = p.v
		}
		e.vars = vars
	case bs.Base != e.version:
		return State{}, Errorf(CodeUnbound, "binding %s holds env version %d, the call changes version %d; resend it in full", short(bs.Binding), e.version, bs.Base)
	default:
		if len(bs.Set) > 0 || len(set) > 0 || len(bs.Unset) > 0 {
			vars := e.vars
			if !b.inPlace || vars == nil {
				vars = make(map[string]any, len(e.vars)+len(bs.Set)+len(set))
				for k, v := range e.vars {
					vars[k] = v
				}
			}
			for _, k := range bs.Unset {
				delete(vars, k)
			}
			for k, v := range bs.Set {
				vars[k] = v
			}
			for _, p := range set {
				vars[p.k] = p.v
			}
			e.vars = vars
		}
	}
	e.version = bs.Version
	// The binding's maps go to the Navigator as they are: it must not
	// modify its requests (Navigator's contract), and a later call
	// replaces e.vars rather than changing it (unless inPlace, where no
	// other call is in progress), so a call in progress on another
	// connection keeps the Env it was given. Copying the vars
	// again here was half of a wasm guest's work per call.
	st := State{Routine: e.routine, Tokens: bs.Tokens, Seq: bs.Seq, Data: bs.Data,
		Env: Env{Input: nilIfEmpty(e.input), Vars: nilIfEmpty(e.vars), Strategy: nilIfEmpty(e.strategy), Now: bs.Now}}
	return st, nil
}

func nilIfEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// binder is the host side of binding, one per client: the bindings it made
// in the plugin and, for each, a mirror of the Env the plugin holds.
type binder struct {
	mu      sync.Mutex
	off     bool         // the plugin refused navigator.bind: send whole requests
	entries []*bindEntry // most recently used first, at most maxBindings
	// loads keeps the routines loaded through this client by hash (at most
	// maxBindings), so that a plugin that lost its bindings (restarted) is
	// given its routine again before it is bound again, and what each
	// reads of the run's variables.
	loads map[string]loaded
}

// loaded is a routine loaded through a binding client.
type loaded struct {
	req   *LoadRequest
	reads *readSet // nil: it may read any variable
}

// readSet is a routine's Reads, as a binder filters variables by it.
type readSet struct {
	names []string
	set   map[string]struct{}
}

func newReadSet(r *Reads) *readSet {
	if r == nil {
		return nil
	}
	rs := &readSet{set: make(map[string]struct{}, len(r.Vars))}
	for _, n := range r.Vars {
		if _, dup := rs.set[n]; !dup {
			rs.set[n] = struct{}{}
			rs.names = append(rs.names, n)
		}
	}
	return rs
}

func (rs *readSet) equal(o *readSet) bool {
	if rs == nil || o == nil {
		return rs == o
	}
	if len(rs.set) != len(o.set) {
		return false
	}
	for n := range rs.set {
		if _, ok := o.set[n]; !ok {
			return false
		}
	}
	return true
}

// each calls f with every variable of vars that rs names (every one when
// rs is nil), by the shorter of the two loops, until f returns false.
func (rs *readSet) each(vars map[string]any, f func(k string, v any) bool) {
	switch {
	case rs == nil:
		for k, v := range vars {
			if !f(k, v) {
				return
			}
		}
	case len(rs.names) <= len(vars):
		for _, k := range rs.names {
			if v, ok := vars[k]; ok && !f(k, v) {
				return
			}
		}
	default:
		for k, v := range vars {
			if _, ok := rs.set[k]; ok && !f(k, v) {
				return
			}
		}
	}
}

type bindEntry struct {
	id       string
	routine  string
	strategy map[string]any // held, so that its identity stays its own
	bound    bool           // navigator.bind answered (since the last CodeUnbound)
	version  uint64         // 0: the plugin holds no Env for it that we know of
	input    mirrored
	vars     map[string]mirrored
	// reads is what the routine reads of the variables (its Load
	// answer's Reads): only those are sent, and mirrored.
	reads *readSet
}

// mirrored is a value as the plugin holds it, in the cheapest form that
// tells whether it changed: a scalar as itself (immutable, so == says),
// a non-nil map of scalars as a copy, anything else as its JSON.
type mirrored struct {
	scalar any
	flat   map[string]any
	json   []byte
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, string, bool, float64, float32, int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8, json.Number:
		return true
	}
	return false
}

// mirror returns v as the binder remembers it.
func mirror(v any) (mirrored, error) {
	if isScalar(v) {
		return mirrored{scalar: v}, nil
	}
	if m, ok := v.(map[string]any); ok && m != nil {
		flat := true
		for _, x := range m {
			if !isScalar(x) {
				flat = false
				break
			}
		}
		if flat {
			return mirrored{flat: maps.Clone(m)}, nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return mirrored{}, err
	}
	return mirrored{json: b}, nil
}

// equals reports whether v is the value m mirrors. A value in another
// form (a scalar of another type: int 2 against float64 2) is not equal:
// a false "changed" only sends a value again.
func (m mirrored) equals(v any) (bool, error) {
	switch {
	case m.json != nil:
		if isScalar(v) {
			return false, nil
		}
		b, err := json.Marshal(v)
		return err == nil && bytes.Equal(b, m.json), err
	case m.flat != nil:
		n, ok := v.(map[string]any)
		if !ok || n == nil || len(n) != len(m.flat) {
			return false, nil
		}
		for k, x := range m.flat {
			if y, ok := n[k]; !ok || !isScalar(y) || x != y {
				return false, nil
			}
		}
		return true, nil
	}
	return isScalar(v) && m.scalar == v, nil
}

// versions names Envs; unique in the host process, so that two clients
// sharing one plugin instance can never take each other's Env for their own.
var versions atomic.Uint64

// entry finds or makes the binding for routine and strategy. A strategy is
// recognised by the identity of its map: the host builds one map per
// strategy and never modifies it (Navigator's contract), and the entry
// keeps the map alive so no other map can take its address.
func (b *binder) entry(routine string, strategy map[string]any) (*bindEntry, error) {
	p := mapID(strategy)
	for i, e := range b.entries {
		if e.routine == routine && mapID(e.strategy) == p && len(e.strategy) == len(strategy) {
			copy(b.entries[1:i+1], b.entries[:i])
			b.entries[0] = e
			return e, nil
		}
	}
	sb, err := json.Marshal(strategy)
	if err != nil {
		return nil, fmt.Errorf("encode strategy: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(routine))
	h.Write([]byte{0})
	h.Write(sb)
	// 128 bits of the digest: every call names the binding, and a
	// collision is still out of reach.
	e := &bindEntry{id: hex.EncodeToString(h.Sum(nil)[:16]), routine: routine, strategy: strategy, reads: b.loads[routine].reads}
	if len(b.entries) >= maxBindings {
		b.entries = b.entries[:maxBindings-1]
	}
	b.entries = append([]*bindEntry{e}, b.entries...)
	return e, nil
}

func mapID(m map[string]any) uintptr {
	if m == nil {
		return 0
	}
	return uintptr(reflect.ValueOf(m).UnsafePointer())
}

// delta fills bs with what changed in st.Env since the Env e's plugin
// holds (everything when reset or when it holds none), and moves the
// mirror on to the new version. Of the variables, it sends and mirrors
// only those the routine reads.
func (e *bindEntry) delta(st *State, reset bool) (BoundState, error) {
	bs := BoundState{Binding: e.id, Version: versions.Add(1), Tokens: st.Tokens, Seq: st.Seq, Data: st.Data, Now: st.Env.Now}
	full := reset || e.version == 0
	if !full {
		same, err := e.input.equals(st.Env.Input)
		if err != nil {
			return bs, fmt.Errorf("encode input: %w", err)
		}
		full = !same
	}
	var err error
	if !full {
		// The mirror moves on in place, and only for what changed; if a
		// value cannot be encoded it no longer says what the plugin holds,
		// so the next call resets.
		n := 0 // variables read
		e.reads.each(st.Env.Vars, func(k string, v any) bool {
			n++
			if old, ok := e.vars[k]; ok {
				same, eerr := old.equals(v)
				if eerr != nil {
					err = fmt.Errorf("encode vars.%s: %w", k, eerr)
					return false
				}
				if same {
					return true
				}
			}
			m, merr := mirror(v)
			if merr != nil {
				err = fmt.Errorf("encode vars.%s: %w", k, merr)
				return false
			}
			e.vars[k] = m
			if bs.Set == nil {
				bs.Set = map[string]any{}
			}
			bs.Set[k] = v
			return true
		})
		if err != nil {
			e.version = 0
			return bs, err
		}
		// Every variable read is in the mirror now: it holds others
		// (removed since) only when it is longer.
		if len(e.vars) > n {
			for k := range e.vars {
				if _, ok := st.Env.Vars[k]; !ok {
					bs.Unset = append(bs.Unset, k)
					delete(e.vars, k)
				}
			}
		}
		sort.Strings(bs.Unset)
		bs.Base = e.version
		full = len(bs.Unset) > n // a new instance: resetting says it shorter
	}
	if full {
		in, err := mirror(st.Env.Input)
		if err != nil {
			e.version = 0
			return bs, fmt.Errorf("encode input: %w", err)
		}
		set := st.Env.Vars
		if e.reads != nil {
			set = nil
		}
		vars := make(map[string]mirrored, len(st.Env.Vars))
		e.reads.each(st.Env.Vars, func(k string, v any) bool {
			if vars[k], err = mirror(v); err != nil {
				err = fmt.Errorf("encode vars.%s: %w", k, err)
				return false
			}
			if e.reads != nil {
				if set == nil {
					set = map[string]any{}
				}
				set[k] = v
			}
			return true
		})
		if err != nil {
			e.version = 0
			return bs, err
		}
		bs.Base, bs.Input, bs.Set, bs.Unset = 0, st.Env.Input, set, nil
		e.input, e.vars = in, vars
	}
	e.version = bs.Version
	return bs, nil
}

// bound runs one navigator call against a binding when the plugin binds,
// else (or when binding fails for good) the whole request through full.
// send makes the bound call from a BoundState.
//
// A CodeUnbound answer is recovered from, in this order: resend the call
// with the whole Env (the plugin lost or moved on the Env), re-bind and
// resend (the plugin lost the binding), and at last the whole request.
func (w *wire) bound(ctx context.Context, st *State, send func(BoundState) (*Decision, error), full func() (*Decision, error)) (*Decision, error) {
	if !w.info.Bind {
		return full()
	}
	b := w.binds
	for attempt := 0; attempt < 3; attempt++ {
		b.mu.Lock()
		if b.off {
			b.mu.Unlock()
			return full()
		}
		e, err := b.entry(st.Routine, st.Env.Strategy)
		if err != nil {
			b.mu.Unlock()
			return nil, fmt.Errorf("plugin %q: %w", w.name, err)
		}
		needBind := !e.bound || attempt == 2
		id, routine, strategy := e.id, e.routine, e.strategy
		reload := b.loads[routine].req
		b.mu.Unlock()
		if attempt == 2 && reload != nil {
			// The plugin holds no binding: it restarted, so it lost the
			// routine too. Loading is idempotent in a plugin that did not.
			if _, err := remote[LoadRequest, Routine](ctx, w, MethodLoad, reload); err != nil {
				return nil, err
			}
		}
		if needBind {
			_, err := remote[BindRequest, Bound](ctx, w, MethodBind, &BindRequest{Binding: id, Routine: routine, Strategy: strategy})
			if errors.Is(err, ErrUnknownMethod) {
				b.mu.Lock()
				b.off = true
				b.mu.Unlock()
				return full()
			}
			if err != nil {
				return nil, err
			}
		}
		b.mu.Lock()
		e.bound = true
		bs, err := e.delta(st, attempt > 0)
		b.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("plugin %q: %w", w.name, err)
		}
		d, err := send(bs)
		if !errors.Is(err, ErrUnbound) {
			return d, err
		}
		b.mu.Lock()
		e.version = 0
		if attempt == 1 {
			e.bound = false
		}
		b.mu.Unlock()
	}
	return full()
}

// load is Navigator.Load; a binding client remembers the routine.
func (w *wire) load(ctx context.Context, r *LoadRequest) (*Routine, error) {
	out, err := remote[LoadRequest, Routine](ctx, w, MethodLoad, r)
	if err != nil || !w.info.Bind {
		return out, err
	}
	b := w.binds
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.loads == nil {
		b.loads = map[string]loaded{}
	}
	if _, ok := b.loads[out.Hash]; !ok && len(b.loads) >= maxBindings {
		for h := range b.loads { // any one: a client loads a routine or two
			delete(b.loads, h)
			break
		}
	}
	reads := newReadSet(out.Reads)
	b.loads[out.Hash] = loaded{req: r, reads: reads}
	for _, e := range b.entries {
		if e.routine == out.Hash && !e.reads.equal(reads) {
			// The plugin answers for this routine differently now (it
			// was replaced): send it every variable the routine reads.
			e.reads, e.version = reads, 0
		}
	}
	return out, nil
}

func (w *wire) start(ctx context.Context, r *StartRequest) (*Decision, error) {
	return w.bound(ctx, &r.State, func(bs BoundState) (*Decision, error) {
		return remote2(ctx, w, MethodBoundStart, &BoundStartRequest{State: bs, Trigger: r.Trigger}, &boundStartCodec)
	}, func() (*Decision, error) {
		return remote2(ctx, w, MethodStart, r, &startCodec)
	})
}

func (w *wire) next(ctx context.Context, r *NextRequest) (*Decision, error) {
	outcome := r.Outcome
	if w.info.OutputBlind {
		// The plugin never reads it (Info.OutputBlind): encoding it is
		// waste on both sides. The caller's request stays as it is.
		outcome.Output = nil
	}
	return w.bound(ctx, &r.State, func(bs BoundState) (*Decision, error) {
		return remote2(ctx, w, MethodBoundNext, &BoundNextRequest{State: bs, Token: r.Token, Outcome: outcome}, &boundNextCodec)
	}, func() (*Decision, error) {
		if outcome.Output == nil && r.Outcome.Output != nil {
			blind := *r
			blind.Outcome = outcome
			return remote2(ctx, w, MethodNext, &blind, &nextCodec)
		}
		return remote2(ctx, w, MethodNext, r, &nextCodec)
	})
}

func (w *wire) boundary(ctx context.Context, r *BoundaryRequest) (*Decision, error) {
	return w.bound(ctx, &r.State, func(bs BoundState) (*Decision, error) {
		return remote2(ctx, w, MethodBoundBoundary, &BoundBoundaryRequest{State: bs, Token: r.Token, Event: r.Event, Payload: r.Payload}, &boundBoundaryCodec)
	}, func() (*Decision, error) {
		return remote2(ctx, w, MethodBoundary, r, &boundaryCodec)
	})
}
