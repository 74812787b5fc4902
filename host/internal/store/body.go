package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// A task's input and truth are its body. A small body stays inside the
// task record (t/<task>/a); one larger than bodyInline is kept under keys
// of its own, t/<task>/b/input and t/<task>/b/truth, written (and so
// redacted) once when the task is created: a status change then rewrites
// a record of a few hundred bytes, not the input again. Readers assemble
// the task as if the body were inline, so nothing outside the store sees
// the difference; a task record that holds its body (a small one, or one
// written before bodies had keys of their own) reads as it always did.
//
// Each body key holds the schema-version byte and the field's JSON as
// encoding/json writes a json.RawMessage inside the task (compact, HTML
// characters escaped): spliced back after the task's pipeline it gives
// the bytes an inline record would hold (Export relies on it).
const bodyInline = 4 << 10

// subBody is the sub-key letter of a task's body keys: right after the
// task record, so a scan of the task reads it next.
const subBody = 'b'

// The body keys' last parts.
const (
	bodyInput = "input"
	bodyTruth = "truth"
)

func bodyKey(task, field string) []byte {
	return append(append(taskSub(task, subBody), '/'), field...)
}

// bodyField names the field of a body key's sub-key (b/input), or "".
func bodyField(sub []byte) string {
	if len(sub) < 3 || sub[0] != subBody || sub[1] != '/' {
		return ""
	}
	switch f := string(sub[2:]); f {
	case bodyInput, bodyTruth:
		return f
	}
	return ""
}

// splitBody reports whether t's body goes under keys of its own.
func splitBody(t *Task) bool { return len(t.Input)+len(t.Truth) > bodyInline }

// encodeTask encodes a checked task as the key-values to store: its
// record, and its body keys when the body is large (bodyKVs).
func (s *Store) encodeTask(t *Task, kvs []kv) ([]kv, error) {
	if !splitBody(t) {
		val, err := s.encodeTaskValue(t)
		if err != nil {
			return nil, err
		}
		return append(kvs, kv{taskKey(t.ID), val}), nil
	}
	head := *t
	head.Input, head.Truth = nil, nil
	val, err := s.encodeTaskValue(&head)
	if err != nil {
		return nil, err
	}
	kvs = append(kvs, kv{taskKey(t.ID), val})
	return s.bodyKVs(t, kvs)
}

// bodyKVs encodes t's input and truth as body keys (those it has).
func (s *Store) bodyKVs(t *Task, kvs []kv) ([]kv, error) {
	for _, f := range [2]struct {
		name string
		raw  json.RawMessage
	}{{bodyInput, t.Input}, {bodyTruth, t.Truth}} {
		if len(f.raw) == 0 {
			continue
		}
		js := []byte(f.raw)
		if !plainCompact(js) {
			// What json.Marshal of the task would hold: compact, HTML
			// characters escaped.
			var err error
			if js, err = json.Marshal(f.raw); err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
		}
		val, err := s.seal(js)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		kvs = append(kvs, kv{bodyKey(t.ID, f.name), val})
	}
	return kvs, nil
}

// setTask writes a task's key-values (encodeTask) in txn and, when the
// task had body keys before (hadBody) that are not kept as they are,
// removes those it no longer has.
func setTask(txn *badger.Txn, w setter, id string, kvs []kv, hadBody, keep bool) error {
	for _, e := range kvs {
		if err := w.Set(e.k, e.v); err != nil {
			return err
		}
	}
	if !hadBody || keep {
		return nil
	}
	for _, f := range [2]string{bodyInput, bodyTruth} {
		key := bodyKey(id, f)
		if !slices.ContainsFunc(kvs, func(e kv) bool { return bytes.Equal(e.k, key) }) {
			if err := txn.Delete(key); err != nil {
				return err
			}
		}
	}
	return nil
}

// hasBodyKeys reports whether a task record read as t may have its body
// under keys of its own: a record that holds an input or a truth holds
// both (a task's body is split whole or not at all).
func hasBodyKeys(t *Task) bool { return len(t.Input) == 0 && len(t.Truth) == 0 }

// readBody fills in t's input and truth from its body keys, if it has
// them. check verifies that each is valid JSON (readers; an update that
// only carries them over needs not).
func readBody(txn *badger.Txn, t *Task, check bool) (found bool, err error) {
	if !hasBodyKeys(t) {
		return false, nil
	}
	for _, f := range [2]string{bodyInput, bodyTruth} {
		key := bodyKey(t.ID, f)
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return false, asDamage(key, err)
		}
		val, err := item.ValueCopy(nil)
		if err != nil {
			return false, asDamage(key, err)
		}
		raw, err := bodyValue(key, val, check)
		if err != nil {
			return false, err
		}
		found = true
		if f == bodyInput {
			t.Input = raw
		} else {
			t.Truth = raw
		}
	}
	return found, nil
}

// bodyValue decodes a body key's value, val, which the caller owns.
func bodyValue(key, val []byte, check bool) (json.RawMessage, error) {
	js, err := unseal(key, val)
	if err != nil {
		return nil, err
	}
	if check && !json.Valid(js) {
		d := &DamageError{Err: fmt.Errorf("decode %s: not valid JSON", printableKey(key))}
		d.Task, _, _ = parseTaskSub(key)
		return nil, d
	}
	return json.RawMessage(js), nil
}

// spliceBody puts a task's body fields (each `"input":…` or
// `"truth":…`, in that order) into the JSON of its record, head, right
// after its pipeline, where encoding/json writes them.
func spliceBody(head []byte, fields [][]byte) ([]byte, error) {
	if len(fields) == 0 {
		return head, nil
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	// {"id":…,"pipeline":…: encoding/json writes the task's fields in
	// their order, and those two are never left out.
	for _, want := range []any{json.Delim('{'), "id", nil, "pipeline", nil} {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("task record: %w", err)
		}
		if want != nil && tok != want {
			return nil, fmt.Errorf("task record: %v where its fields begin", tok)
		}
	}
	at := int(dec.InputOffset())
	out := make([]byte, 0, len(head)+len(fields)*8+bodyLen(fields))
	out = append(out, head[:at]...)
	for _, f := range fields {
		out = append(out, ',')
		out = append(out, f...)
	}
	return append(out, head[at:]...), nil
}

func bodyLen(fields [][]byte) int {
	n := 0
	for _, f := range fields {
		n += len(f)
	}
	return n
}

// getTask reads a task record and its body.
func getTask(txn *badger.Txn, id string, t *Task) error {
	if err := get(txn, taskKey(id), t); err != nil {
		return err
	}
	_, err := readBody(txn, t, true)
	return err
}

// encodeTaskUpdate is encodeTask for t, an update of old (read with its
// body; hadBody: from body keys). A body that did not change and stays
// under its keys is not encoded (nor redacted) again: keep says so, and
// only the record is returned.
//
// The entries are appended to kvs. When w gives room (the applier: see
// roomer) for a task whose body is inline, the record's key and value
// are carved from it.
func (s *Store) encodeTaskUpdate(t, old *Task, hadBody bool, kvs []kv, w setter) (_ []kv, keep bool, err error) {
	if !hadBody || !splitBody(t) || !bytes.Equal(t.Input, old.Input) || !bytes.Equal(t.Truth, old.Truth) {
		if r, ok := w.(roomer); ok && !splitBody(t) {
			key := append(appendTaskPrefix(r.key(len(pTask)+len(t.ID)+2), t.ID), subTask)
			val, _, err := s.appendTaskValue(r.key(1+taskSize(t)), t)
			if err != nil {
				return nil, false, err
			}
			return append(kvs, kv{key, val}), false, nil
		}
		kvs, err = s.encodeTask(t, kvs)
		return kvs, false, err
	}
	head := *t
	head.Input, head.Truth = nil, nil
	val, err := s.encodeTaskValue(&head)
	if err != nil {
		return nil, false, err
	}
	return append(kvs, kv{taskKey(t.ID), val}), true, nil
}

// roomer is a setter that gives room for the bytes it is told to set,
// which it keeps until it commits them (the applier's key arena).
type roomer interface{ key(n int) []byte }
