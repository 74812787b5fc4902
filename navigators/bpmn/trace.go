package bpmn

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sextant-dev/sextant/sdk"
)

// A call records its trace as pointer-free keys, in the pooled run; the
// decision's Trace is then the routine's own copy of those events when an
// earlier answer carried the same ones, and a fresh array otherwise. The
// instances of a routine take the same few paths, so most answers carry a
// trace that costs them nothing. The routine's copies are never written
// after they are published: answers share them as they share the routine's
// node ids and token triggers.

// traceKey is one trace event: the node's index in model.nodes, shifted
// left once, plus traceExit for an exit.
type traceKey uint32

const (
	traceEnter traceKey = 0
	traceExit  traceKey = 1
)

// Bounds of a routine's traces: longer traces are not kept, nor more than
// maxTraces of them, so that a routine whose calls keep taking new paths
// holds a bounded amount of memory.
const (
	maxCachedTrace = 16
	maxTraces      = 256
)

// traceEntry is one kept trace: the hash of its keys, its keys and the
// events they stand for.
type traceEntry struct {
	hash   uint64
	keys   []traceKey
	events []sdk.Event
}

// traceTable is an immutable open-addressing table of traces: a power of
// two of slots, at most half of them used, probed linearly from the hash.
type traceTable struct {
	slots []*traceEntry
	n     int
}

// find returns the entry of keys, whose hash is h, or nil.
func (tt *traceTable) find(h uint64, keys []traceKey) *traceEntry {
	mask := uint64(len(tt.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := tt.slots[i]
		if e == nil || e.hash == h && slices.Equal(e.keys, keys) {
			return e
		}
	}
}

// with returns a copy of tt holding e too.
func (tt *traceTable) with(e *traceEntry) *traceTable {
	size := 16
	if tt != nil {
		size = len(tt.slots)
		if 2*(tt.n+1) > size {
			size *= 2
		}
	}
	next := &traceTable{slots: make([]*traceEntry, size)}
	if tt != nil {
		for _, o := range tt.slots {
			if o != nil {
				next.put(o)
			}
		}
	}
	next.put(e)
	return next
}

func (tt *traceTable) put(e *traceEntry) {
	mask := uint64(len(tt.slots) - 1)
	i := e.hash & mask
	for tt.slots[i] != nil {
		i = (i + 1) & mask
	}
	tt.slots[i] = e
	tt.n++
}

// traceCache holds a routine's traces. Readers load the table without
// locking; a writer publishes a copy with one entry more.
type traceCache struct {
	mu sync.Mutex
	t  atomic.Pointer[traceTable]
}

// emit records that a token entered (traceEnter) or left (traceExit) n.
func (r *run) emit(typ traceKey, n *node) {
	r.trace = append(r.trace, traceKey(n.ix<<1)|typ)
}

// hashKeys is FNV-1a over the keys.
func hashKeys(keys []traceKey) uint64 {
	h := uint64(14695981039346656037)
	for _, k := range keys {
		h ^= uint64(k)
		h *= 1099511628211
	}
	return h
}

// trace returns the events of keys: the routine's copy when it has one or
// can keep one more, else an array carved from mem.
func (m *model) trace(keys []traceKey, mem *answerMem) []sdk.Event {
	if len(keys) > maxCachedTrace {
		return m.events(keys, carve(&mem.events, len(keys), chunkEvents))
	}
	h := hashKeys(keys)
	if tt := m.traces.t.Load(); tt != nil {
		if e := tt.find(h, keys); e != nil {
			return e.events
		}
	}
	return m.addTrace(h, keys, mem)
}

// addTrace keeps the trace of keys, whose hash is h, unless the routine
// holds maxTraces already.
func (m *model) addTrace(h uint64, keys []traceKey, mem *answerMem) []sdk.Event {
	tc := &m.traces
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tt := tc.t.Load()
	if tt != nil {
		if e := tt.find(h, keys); e != nil {
			return e.events // another call kept it meanwhile
		}
		if tt.n >= maxTraces {
			return m.events(keys, carve(&mem.events, len(keys), chunkEvents))
		}
	}
	e := &traceEntry{hash: h, keys: slices.Clone(keys), events: m.events(keys, make([]sdk.Event, len(keys)))}
	tc.t.Store(tt.with(e))
	return e.events
}

// events writes the events of keys into out, fresh memory of the same
// length, field by field (see run.token), and returns it.
func (m *model) events(keys []traceKey, out []sdk.Event) []sdk.Event {
	for i, k := range keys {
		typ := sdk.Enter
		if k&traceExit != 0 {
			typ = sdk.Exit
		}
		out[i].Type, out[i].Node = typ, m.nodes[k>>1].id
	}
	return out
}
