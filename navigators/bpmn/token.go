package bpmn

import (
	"strconv"

	"github.com/sextant-dev/sextant/sdk"
)

// tokKind tells a plain token from the body and the instances of a
// multi-instance activity.
type tokKind uint8

// tok is the engine's view of one token. Its pointer-free fields are
// grouped in tokBits, so that a reused slot is reset with one plain copy
// plus one store per pointer (see run.slot).
type tok struct {
	id       string
	n        *node
	status   sdk.TokenStatus // "" while moving
	scope    *tok
	flow     *flow // flow crossed, or arrived on
	triggers []string
	attrs    map[string]any
	tokBits
}

// tokBits are the fields of a token that hold no pointer.
type tokBits struct {
	ownAttrs bool // attrs is a private copy
	attempt  int
	delay    int64
	kind     tokKind
	kids     int   // live tokens whose scope this is
	ix       int32 // index in run.toks

	dead, orig, dirty, completing bool
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

// ids holds the first token ids, so that naming a token allocates nothing.
var ids = func() []string {
	out := make([]string, 1024)
	for i := range out {
		out[i] = "t" + strconv.Itoa(i)
	}
	return out
}()

func tokenID(seq int64) string {
	if seq >= 0 && seq < int64(len(ids)) {
		return ids[seq]
	}
	return "t" + strconv.FormatInt(seq, 10)
}
