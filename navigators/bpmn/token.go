package bpmn

import (
	"strconv"
	"unsafe"

	"github.com/sextant-dev/sextant/sdk"
)

// tokKind tells a plain token from the body and the instances of a
// multi-instance activity.
type tokKind uint8

// tokStatus is a token's status inside the engine: a byte, where
// sdk.Token's is a string (see statuses).
type tokStatus uint8

const (
	stMoving tokStatus = iota
	stReady
	stWaiting
	stParked
	stScope
)

// statuses are the sdk statuses of tokStatus values; a moving token has
// none.
var statuses = [...]sdk.TokenStatus{stMoving: "", stReady: sdk.Ready, stWaiting: sdk.Waiting, stParked: sdk.Parked, stScope: sdk.Scope}

// restingStatus returns the engine status of a status the host holds, and
// false for any other.
func restingStatus(s sdk.TokenStatus) (tokStatus, bool) {
	switch s {
	case sdk.Ready:
		return stReady, true
	case sdk.Waiting:
		return stWaiting, true
	case sdk.Parked:
		return stParked, true
	case sdk.Scope:
		return stScope, true
	}
	return stMoving, false
}

// tok is the engine's view of one token. Its id, node, status and flow
// are numbers, not strings and pointers (see tokBits): the run is pooled,
// and while a collection marks, every pointer stored into a reused slot
// pays the GC's write barrier.
type tok struct {
	scope    *tok
	triggers []string
	attrs    map[string]any
	name     string // the id of a new token numbered past the ids table
	tokBits
}

// tokBits are the fields of a token that hold no pointer. A slot is reset
// by zeroing them, then storing the few that are set (see tok.reset): a
// struct built on the stack and copied whole is read back in wide loads
// before its narrow stores reach memory, which stalls the copy.
type tokBits struct {
	attempt int
	delay   int64
	seq     int64  // a new token's id number, once named (see run.tid)
	src     int32  // index of an original token in run.in, or -1
	fl      int32  // one plus the index in model.flowList of the flow crossed or arrived on
	kids    int32  // live tokens whose scope this is
	ix      int32  // index in run.toks
	ni      uint32 // its node's index in model.nodes (see run.node)
	status  tokStatus
	kind    tokKind

	ownAttrs                             bool // attrs is a private copy
	dead, orig, dirty, completing, named bool
}

func (t *tok) attr(k string) any {
	if t.attrs == nil {
		return nil
	}
	return t.attrs[k]
}

// setAttr sets an attribute, copying attrs first if they are shared with
// the caller's state.
func (t *tok) setAttr(k string, v any) {
	if !t.ownAttrs {
		m := make(map[string]any, len(t.attrs)+1)
		for kk, vv := range t.attrs {
			m[kk] = vv
		}
		t.attrs = m
		t.ownAttrs = true
	}
	t.attrs[k] = v
	t.dirty = true
}

// setShared sets one attribute; a token without attributes takes shared,
// an immutable map holding just that attribute, instead of a new map.
func (t *tok) setShared(shared map[string]any, k string) {
	if len(t.attrs) == 0 {
		t.attrs, t.ownAttrs, t.dirty = shared, false, true
		return
	}
	t.setAttr(k, shared[k])
}

// choiceAttrs marks a token waiting for the host to choose (shared).
var choiceAttrs = map[string]any{attrChoice: true}

func (t *tok) delAttr(k string) {
	if _, ok := t.attrs[k]; !ok {
		return
	}
	t.setAttr(k, nil)
	delete(t.attrs, k)
}

func (t *tok) interrupted() bool { b, _ := t.attr(attrInterrupted).(bool); return b }

// ids holds the first token ids, so that naming a token allocates
// nothing. The table and the ids' bytes (idsText) are globals: a pointer
// outside the heap costs the GC's write barrier (while a collection
// marks) one lookup that finds no heap there, where one into the heap has
// its object found and marked, and answers store a token's id wherever
// they name one.
var ids [1024]string

// idsText holds the bytes of ids: 't' and up to four digits each.
var idsText [len(ids) * 5]byte

func init() {
	b := idsText[:0]
	for i := range ids {
		start := len(b)
		b = strconv.AppendInt(append(b, 't'), int64(i), 10)
		ids[i] = unsafe.String(&b[start], len(b)-start)
	}
	if &b[0] != &idsText[0] {
		panic("bpmn: token ids outgrew their table")
	}
}

func tokenID(seq int64) string {
	if seq >= 0 && seq < int64(len(ids)) {
		return ids[seq]
	}
	return "t" + strconv.FormatInt(seq, 10)
}
