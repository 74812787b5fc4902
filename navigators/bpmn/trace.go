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

// traceEntry is one kept trace: its keys and the events they stand for.
type traceEntry struct {
	keys   []traceKey
	events []sdk.Event
}

// traceCache holds a routine's traces by the hash of their keys. Readers
// load the map without locking; a writer publishes a copy with one entry
// more.
type traceCache struct {
	mu sync.Mutex
	m  atomic.Pointer[map[uint64]*traceEntry]
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
	if c := m.traces.m.Load(); c != nil {
		if e := (*c)[h]; e != nil && slices.Equal(e.keys, keys) {
			return e.events
		}
	}
	return m.addTrace(h, keys, mem)
}

// addTrace keeps the trace of keys, whose hash is h, unless the routine
// holds maxTraces already or another trace with the same hash.
func (m *model) addTrace(h uint64, keys []traceKey, mem *answerMem) []sdk.Event {
	tc := &m.traces
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var old map[uint64]*traceEntry
	if c := tc.m.Load(); c != nil {
		old = *c
	}
	if e := old[h]; e != nil || len(old) >= maxTraces {
		if e != nil && slices.Equal(e.keys, keys) {
			return e.events // another call kept it meanwhile
		}
		return m.events(keys, carve(&mem.events, len(keys), chunkEvents))
	}
	e := &traceEntry{keys: slices.Clone(keys), events: m.events(keys, make([]sdk.Event, len(keys)))}
	next := make(map[uint64]*traceEntry, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[h] = e
	tc.m.Store(&next)
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
