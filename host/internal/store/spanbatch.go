package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/dgraph-io/badger/v4"
)

// spanBatch is the most spans one span entry holds: a burst of fresh
// spans of an execution is written as entries of up to this many (see
// encodeSpansInto). A test sets it to 1 to write a store as layout 4 did.
var spanBatch = 64

// A span entry (t/<task>/s/<exec>/<seq:8>) holds one span, as an object
// whose seq is the key's, or a batch of spans, as an array of objects
// that carry their seq, the key's being the last. Layout 4 wrote single
// spans only; readers take both.

// isBatch reports whether a span entry's JSON is a batch.
func isBatch(js []byte) bool { return len(js) > 0 && js[0] == '[' }

// appendDecodedSpans appends the spans of one span entry to out.
func appendDecodedSpans(out []Span, key, val []byte) ([]Span, error) {
	task, sub, ok := parseTaskSub(key)
	if !ok {
		return out, fmt.Errorf("bad span key %s", printableKey(key))
	}
	exec, seq, ok := parseSpanSub(sub)
	if !ok {
		return out, fmt.Errorf("bad span key %s", printableKey(key))
	}
	js, err := unseal(key, val)
	if err != nil {
		return out, err
	}
	if !isBatch(js) {
		var sp Span
		if err := decode(key, val, &sp); err != nil {
			return out, err
		}
		sp.Task, sp.Execution, sp.Seq = task, exec, seq
		out = append(out, sp)
		fillDerivedIDs(out[len(out)-1:], task, exec)
		return out, nil
	}
	n := len(out)
	var batch []Span // Unmarshal empties a slice before it appends
	if err := json.Unmarshal(js, &batch); err != nil {
		return out, damaged(key, err)
	}
	if n == 0 {
		out = batch
	} else {
		out = append(out, batch...)
	}
	prev := uint64(0)
	for i := n; i < len(out); i++ {
		sp := &out[i]
		if sp.Seq <= prev || sp.Seq > seq || (i == len(out)-1 && sp.Seq != seq) {
			return out[:n], damaged(key, fmt.Errorf("span seq %d out of order in a batch ending at %d", sp.Seq, seq))
		}
		prev = sp.Seq
		sp.Task, sp.Execution = task, exec
	}
	fillDerivedIDs(out[n:], task, exec)
	return out, nil
}

// fillDerivedIDs sets the ids a span entry left out because they are
// derived from its key (layout 6, see implicitIDs); a span of layout 5
// or before has them all. The span ids of an entry share one string.
func fillDerivedIDs(spans []Span, task, exec string) {
	var trace string
	var base uint64
	var ids []byte
	for i := range spans {
		sp := &spans[i]
		if sp.TraceID == "" {
			if trace == "" {
				trace = TraceIDFor(task, exec)
			}
			sp.TraceID = trace
		}
		if sp.SpanID == "" {
			if ids == nil {
				base = spanIDBase(task, exec)
				ids = make([]byte, 0, 16*(len(spans)-i))
			}
			ids = appendSpanID(ids, base, sp.Seq)
		}
	}
	if ids == nil {
		return
	}
	all := string(ids)
	for i := range spans {
		if sp := &spans[i]; sp.SpanID == "" {
			sp.SpanID, all = all[:16], all[16:]
		}
	}
}

// implicitIDsOf puts back into the JSON objects of an execution's spans
// the ids their entry left out (see fillDerivedIDs), so that what
// eachSpanJSON passes on is whole. The encoder writes trace_id and
// span_id first when it writes them.
type implicitIDsOf struct {
	task, exec string
	trace      string
	base       uint64
	based      bool
}

// appendObject appends {, the ids fields lacks, and fields (the
// object's fields after its brace).
func (d *implicitIDsOf) appendObject(b []byte, seq uint64, fields []byte) []byte {
	b = append(b, '{')
	if !bytes.HasPrefix(fields, []byte(`"trace_id":`)) {
		if d.trace == "" {
			d.trace = TraceIDFor(d.task, d.exec)
		}
		b = append(b, `"trace_id":"`...)
		b = append(b, d.trace...)
		b = append(b, `",`...)
	} else if end := bytes.IndexByte(fields[len(`"trace_id":"`):], '"'); end >= 0 {
		n := len(`"trace_id":"`) + end + 1
		if n < len(fields) && fields[n] == ',' {
			n++
		}
		b = append(b, fields[:n]...)
		fields = fields[n:]
	}
	if !bytes.HasPrefix(fields, []byte(`"span_id":`)) {
		if !d.based {
			d.base, d.based = spanIDBase(d.task, d.exec), true
		}
		b = append(b, `"span_id":"`...)
		b = appendSpanID(b, d.base, seq)
		b = append(b, `",`...)
	}
	return append(b, fields...)
}

// damaged is the DamageError of a stored value that does not decode.
func damaged(key []byte, err error) error {
	d := &DamageError{Err: fmt.Errorf("decode %s: %w", printableKey(key), err)}
	d.Task, _, _ = parseTaskSub(key)
	return d
}

// eachSpanJSON calls fn with the seq and JSON object of every span of a
// span entry, in seq order. A batch's objects carry their seq, which
// fn's obj leaves out: it is what a single span's value holds. obj is
// only valid during the call.
func eachSpanJSON(key, val []byte, fn func(seq uint64, obj []byte) error) error {
	task, sub, ok := parseTaskSub(key)
	if !ok {
		return fmt.Errorf("bad span key %s", printableKey(key))
	}
	exec, seq, ok := parseSpanSub(sub)
	if !ok {
		return fmt.Errorf("bad span key %s", printableKey(key))
	}
	js, err := unseal(key, val)
	if err != nil {
		return err
	}
	ids := implicitIDsOf{task: task, exec: exec}
	if !isBatch(js) {
		if len(js) < 2 || js[0] != '{' {
			return damaged(key, errors.New("a span is not a JSON object"))
		}
		return fn(seq, ids.appendObject(nil, seq, js[1:]))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(js, &elems); err != nil {
		return damaged(key, err)
	}
	var obj []byte // the element without its seq (el is Badger's: not written to)
	for _, el := range elems {
		n, fields, ok := cutSeq(el)
		if !ok {
			return damaged(key, fmt.Errorf("a span of the batch ending at %d has no leading seq", seq))
		}
		obj = ids.appendObject(obj[:0], n, fields)
		if err := fn(n, obj); err != nil {
			return err
		}
	}
	return nil
}

// cutSeq splits a batch element {"seq":N,FIELDS} into N and FIELDS
// (with the closing brace), which it leaves in el.
func cutSeq(el []byte) (seq uint64, fields []byte, ok bool) {
	const head = `{"seq":`
	if !bytes.HasPrefix(el, []byte(head)) {
		return 0, nil, false
	}
	rest := el[len(head):]
	end := bytes.IndexByte(rest, ',')
	if end <= 0 {
		return 0, nil, false
	}
	seq, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return seq, rest[end+1:], true
}

// rewriteSpans sets spans that may have been written before (e is a
// single span's key and value): into the batch that holds the span's seq
// when one does, so that no seq is stored twice, else on their own.
func rewriteSpans(txn *badger.Txn, rewrites []kv) error {
	for _, e := range rewrites {
		if err := rewriteSpan(txn, e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

func rewriteSpan(txn *badger.Txn, key, val []byte) error {
	n := len(key) - 8
	prefix, seq := key[:n], binary.BigEndian.Uint64(key[n:])
	// The first entry at or after seq is the only one that can hold it.
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	it.Seek(key)
	var (
		at  []byte
		cur []byte
		err error
	)
	if it.ValidForPrefix(prefix) {
		at = it.Item().KeyCopy(nil)
		cur, err = it.Item().ValueCopy(nil)
	}
	it.Close()
	if err != nil {
		return asDamage(at, err)
	}
	if at == nil || bytes.Equal(at, key) && !isBatch(cur[min(1, len(cur)):]) {
		return txn.Set(key, val)
	}
	js, err := unseal(at, cur)
	if err != nil {
		return err
	}
	if !isBatch(js) {
		return txn.Set(key, val) // a later single span: seq is not stored
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(js, &elems); err != nil {
		return damaged(at, err)
	}
	found := false
	for i, el := range elems {
		if n, _, ok := cutSeq(el); ok && n == seq {
			// {"seq":N, and the single span's fields.
			b := append([]byte(`{"seq":`), strconv.FormatUint(seq, 10)...)
			b = append(b, ',')
			elems[i] = append(b, val[2:]...) // val is the version byte and {…}
			found = true
			break
		}
	}
	if !found {
		return txn.Set(key, val)
	}
	b := []byte{schemaVersion, '['}
	for i, el := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, el...)
	}
	return txn.Set(at, append(b, ']'))
}
