package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
)

// CreateExecution stores a new execution of an existing task. It fills
// in the id (a new ULID), the status (running), the trace id (derived,
// see TraceIDFor) and the start time (the store's clock) when empty.
func (s *Store) CreateExecution(ctx context.Context, e *Execution) error {
	if e.Started.IsZero() {
		e.Started = s.Now()
	}
	if e.ID == "" {
		e.ID = s.ids.nextAt(e.Started)
	}
	return s.putExecution(ctx, e, true)
}

// PutExecution creates or replaces an execution (to record its end,
// status or error).
func (s *Store) PutExecution(ctx context.Context, e *Execution) error {
	return s.putExecution(ctx, e, false)
}

func (s *Store) putExecution(ctx context.Context, e *Execution, create bool) error {
	if e.Status == "" {
		e.Status = StatusRunning
	}
	if e.Started.IsZero() {
		e.Started = s.Now()
	}
	e.Started, e.Ended = e.Started.UTC(), e.Ended.UTC()
	if e.TraceID == "" && validID("execution id", e.ID) == nil && validID("task id", e.Task) == nil {
		e.TraceID = TraceIDFor(e.Task, e.ID)
	}
	if err := checkExecution(e); err != nil {
		return fmt.Errorf("write execution: %w", err)
	}
	val, err := s.encodeExecution(e)
	if err != nil {
		return fmt.Errorf("write execution %q: %w", e.ID, err)
	}
	err = s.update(ctx, func(txn *badger.Txn) error {
		if ok, err := exists(txn, taskKey(e.Task)); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("task %q: %w", e.Task, ErrNotFound)
			}
			return err
		}
		key, v := execKey(e.Task, e.ID), val // update may run this again
		if create {
			if ok, err := exists(txn, key); err != nil || ok {
				if ok {
					err = ErrExists
				}
				return err
			}
		} else {
			// What the record holds beside the execution goes on
			// (execfold.go).
			err := getWith(txn, key, func(old []byte) error {
				if tail := foldedTail(old, false); tail != nil {
					v = appendFolded(make([]byte, 0, len(val)+len(tail)+1), val, nil, nil, nil, tail)
				}
				return nil
			})
			if err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		if p, ok, err := sumAt(txn, e.Task); err != nil {
			return err
		} else if ok {
			if err := txn.Set(sumExecKey(p, e.ID), sumExecValue(e)); err != nil {
				return err
			}
		}
		return txn.Set(key, v)
	})
	if err != nil {
		return fmt.Errorf("write execution %q: %w", e.ID, err)
	}
	if e.Status == StatusCompleted || e.Status == StatusFailed {
		s.seqs.forget(e.Task, e.ID)
	}
	return nil
}

func checkExecution(e *Execution) error {
	if err := validID("task id", e.Task); err != nil {
		return err
	}
	if err := validID("execution id", e.ID); err != nil {
		return err
	}
	if !e.Status.Valid() {
		return fmt.Errorf("execution %q: unknown status %q", e.ID, e.Status)
	}
	if err := validHexID("trace id", e.TraceID, 16); err != nil {
		return fmt.Errorf("execution %q: %w", e.ID, err)
	}
	if e.Mode != "" && e.Mode != "live" && e.Mode != "replay" {
		return fmt.Errorf("execution %q: unknown mode %q (want live or replay)", e.ID, e.Mode)
	}
	return nil
}

// Execution reads one execution.
func (s *Store) Execution(ctx context.Context, task, id string) (*Execution, error) {
	if err := validID("task id", task); err != nil {
		return nil, fmt.Errorf("read execution: %w", err)
	}
	if err := validID("execution id", id); err != nil {
		return nil, fmt.Errorf("read execution: %w", err)
	}
	var e Execution
	if err := s.view(ctx, func(txn *badger.Txn) error { return get(txn, execKey(task, id), &e) }); err != nil {
		return nil, fmt.Errorf("read execution %q of task %q: %w", id, task, err)
	}
	return &e, nil
}

// AppendSpans writes spans. A span whose Seq is zero gets the next
// number of its execution, and empty trace and span ids are derived (see
// TraceIDFor, SpanIDFor); the slice's elements are updated with them. The
// execution must exist. Every span is checked before any is written; a
// burst of up to 256 spans is one transaction, a longer one is written in
// transactions of that size, pipelined so that encoding overlaps Badger's
// commit.
func (s *Store) AppendSpans(ctx context.Context, spans []Span) error {
	if len(spans) == 0 {
		return nil
	}
	if s.ro {
		return fmt.Errorf("write spans: store %s: %w", s.dir, ErrReadOnly)
	}
	fresh := make([]fate, len(spans))
	if err := s.checkSpans(ctx, spans, fresh); err != nil {
		return fmt.Errorf("write spans: %w", err)
	}
	return s.writeSpans(ctx, spans, fresh)
}

// StageSpans writes spans of an execution that need not be in the store
// yet: a run driven elsewhere (on Temporal) whose task and execution are
// written when it ends, so that a long run's spans need not travel in one
// message. Every span must carry its Seq; empty trace and span ids are
// derived as AppendSpans derives them. Spans of a task not in the store are
// invisible (everything that reads spans reaches them through their task)
// until its task is written. Writing a span again replaces it, so a
// retried call is harmless.
func (s *Store) StageSpans(ctx context.Context, spans []Span) error {
	if len(spans) == 0 {
		return nil
	}
	if s.ro {
		return fmt.Errorf("stage spans: store %s: %w", s.dir, ErrReadOnly)
	}
	for i := range spans {
		sp := &spans[i]
		if err := validID("task id", sp.Task); err != nil {
			return fmt.Errorf("stage spans: %w", err)
		}
		if err := validID("execution id", sp.Execution); err != nil {
			return fmt.Errorf("stage spans: %w", err)
		}
		if sp.Seq == 0 {
			return fmt.Errorf("stage spans: span %d (%q) of execution %q has no seq: %w", i, sp.Name, sp.Execution, ErrInvalid)
		}
		if sp.TraceID == "" {
			sp.TraceID = TraceIDFor(sp.Task, sp.Execution)
		}
		if sp.SpanID == "" {
			sp.SpanID = spanIDFrom(spanIDBase(sp.Task, sp.Execution), sp.Seq)
		}
		if err := checkSpan(sp); err != nil {
			return fmt.Errorf("stage spans: %w", err)
		}
		// Later spans of the execution (Begin's "fresh" included) number
		// on from these.
		s.seqs.staged(sp.Task, sp.Execution, sp.Seq)
		s.marks.note(sp.Task) // before the write: see markWatch
	}
	hook("marks-noted")
	// A retried call may have written them before, in batches of
	// another size: each is rewritten where it is (no fresh spans).
	if err := s.writeSpans(ctx, spans, nil); err != nil {
		return fmt.Errorf("stage spans: %w", err)
	}
	return nil
}

// writeSpans writes checked spans (fresh as checkSpans set it): one
// transaction for a burst of up to spanChunk, pipelined transactions of
// that size for a longer one.
func (s *Store) writeSpans(ctx context.Context, spans []Span, fresh []fate) error {
	if err := s.settle(); err != nil { // spans the journal holds go first
		return fmt.Errorf("write spans: %w", err)
	}
	if len(spans) <= spanChunk {
		buf := getSpanBuf()
		kvs, rewrites, err := s.encodeSpansInto(spans, fresh, nil, buf)
		if err == nil {
			err = s.writeSpanKVs(ctx, kvs, rewrites)
		}
		if err != nil {
			return fmt.Errorf("write spans: %w", err)
		}
		spanBufs.Put(buf)
		return nil
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	var kvs, rewrites []kv
	s.wmu.RLock() // until every commit below is done: no snapshot in between
	defer s.wmu.RUnlock()
	for off := 0; off < len(spans); off += spanChunk {
		if err := ctx.Err(); err != nil {
			fail(err)
			break
		}
		var err error
		buf := getSpanBuf()
		end := min(off+spanChunk, len(spans))
		var chunkFresh []fate
		if fresh != nil {
			chunkFresh = fresh[off:end]
		}
		if kvs, rewrites, err = s.encodeSpansInto(spans[off:end], chunkFresh, kvs[:0], buf); err != nil {
			fail(err)
			break
		}
		txn := s.db.NewTransaction(true)
		err = placeUsage(txn, kvs)
		for _, e := range kvs {
			if err != nil {
				break
			}
			err = setSpanKV(txn, e, len(rewrites) > 0)
		}
		if err == nil {
			err = rewriteSpans(txn, rewrites)
		}
		if err != nil {
			txn.Discard()
			fail(err)
			break
		}
		wg.Add(1)
		txn.CommitWith(func(err error) {
			if err != nil {
				fail(err)
			} else {
				spanBufs.Put(buf) // Badger has copied the chunk
			}
			wg.Done()
		})
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("write spans: %w", firstErr)
	}
	return nil
}

// spanChunk is the most spans one transaction of AppendSpans holds
// (about 120 KiB), far below Badger's transaction limit.
const spanChunk = 256

type kv struct{ k, v []byte }

// fate is how a checked span is written (see checkSpans).
type fate uint8

const (
	// fateRewrite: the span may sit in an entry already (rewriteSpans).
	fateRewrite fate = iota
	// fateFresh: the span numbers past every span of its execution written
	// so far; fresh spans are batched (encodeSpansInto).
	fateFresh
	// fateAbsent: no entry holds the span's seq (its execution had no spans
	// when this process made its counter, and every seq written since is
	// higher); it is an entry of its own, set without a look.
	fateAbsent
)

// checkSpans numbers the spans and fills in derived ids, checking on
// first sight that each execution exists, then checks every span. It
// sets each span's fate.
func (s *Store) checkSpans(ctx context.Context, spans []Span, fates []fate) error {
	var cur *execSeq
	var derivedTraceOK bool // cur's derived trace id is valid
	// The derived span ids, hex by hex, and the spans they go to: one
	// string for the burst rather than one per span.
	var ids strings.Builder
	var derived []int32
	defer func() {
		if len(derived) == 0 {
			return
		}
		all := ids.String()
		for k, i := range derived {
			spans[i].SpanID = all[16*k : 16*k+16]
		}
	}()
	for i := range spans {
		sp := &spans[i]
		if cur == nil || sp.Task != spans[i-1].Task || sp.Execution != spans[i-1].Execution {
			if err := validID("task id", sp.Task); err != nil {
				return err
			}
			if err := validID("execution id", sp.Execution); err != nil {
				return err
			}
			var err error
			if cur, err = s.seqs.get(ctx, s, sp.Task, sp.Execution); err != nil {
				return err
			}
			derivedTraceOK = validHexID("trace id", cur.traceID, 16) == nil
		}
		fates[i] = cur.assign(sp)
		if sp.TraceID == "" {
			sp.TraceID = cur.traceID
		}
		// A derived span id is 16 hex digits, never all zeros (see
		// spanIDFrom), the derived trace id was checked above: only the
		// ids the writer chose need a check.
		givenTrace := sp.TraceID != cur.traceID || !derivedTraceOK
		given := sp.SpanID != ""
		if !given {
			if derived == nil {
				ids.Grow(16 * (len(spans) - i))
				derived = make([]int32, 0, len(spans)-i)
			}
			var id [16]byte
			ids.Write(appendSpanID(id[:0], cur.spanBase, sp.Seq))
			derived = append(derived, int32(i))
		}
		if err := checkSpanIDs(sp, givenTrace, given); err != nil {
			return err
		}
		if err := checkSpanFields(sp); err != nil {
			return err
		}
	}
	return nil
}

// spanBufs recycles the buffers a burst of spans is encoded into, once
// the burst's commit is done: Badger has then copied its keys and values
// into its logs and memtable. A chunk's buffer is about 130 KiB, which
// allocating (and zeroing) anew for every chunk costs as much as
// encoding a tenth of its spans.
var spanBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512*spanChunk+256); return &b }}

// checkpointScratch is what a checkpoint encodes into (see checkpoint):
// its buffer and room for its entries.
type checkpointScratch struct {
	buf   *[]byte
	kvs   [4]kv
	begin []kv      // Begin's entries
	keep  keepRoom  // what a Begin keeps past its journaling (not emptied by put)
	ex    Execution // the execution a checkpoint updates (updatedExecution)
}

// carve appends a value to the scratch's buffer with add and returns it,
// a slice of its own: the buffer may outgrow its array, and what was
// carved before keeps the old one.
func (sc *checkpointScratch) carve(add func([]byte) ([]byte, error)) ([]byte, error) {
	start := len(*sc.buf)
	b, err := add(*sc.buf)
	if err != nil {
		return nil, err
	}
	*sc.buf = b
	return b[start:len(b):len(b)], nil
}

// carveKey is carve for an add that cannot fail.
func (sc *checkpointScratch) carveKey(add func([]byte) []byte) []byte {
	start := len(*sc.buf)
	b := add(*sc.buf)
	*sc.buf = b
	return b[start:len(b):len(b)]
}

var checkpointScratches = sync.Pool{New: func() any { return new(checkpointScratch) }}

// put empties sc and recycles it.
func (sc *checkpointScratch) put() {
	*sc.buf = (*sc.buf)[:0]
	clear(sc.kvs[:])
	clear(sc.begin[:cap(sc.begin)])
	sc.begin = sc.begin[:0]
	sc.ex = Execution{}
	checkpointScratches.Put(sc)
}

// getSpanBuf returns an empty buffer from spanBufs.
func getSpanBuf() *[]byte {
	b := spanBufs.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

// encodeSpans encodes and redacts checked spans, appending their keys
// and values to kvs (and those of spans written before to rewrites, see
// encodeSpansInto). Keys and values share one buffer.
func (s *Store) encodeSpans(spans []Span, fresh []fate, kvs []kv) (_, rewrites []kv, _ error) {
	buf := make([]byte, 0, 512*len(spans)+256)
	return s.encodeSpansInto(spans, fresh, kvs, &buf)
}

// encodeSpansInto is encodeSpans into *bufp, which it leaves holding the
// buffer's last array (the keys and values of kvs are in it, or in
// arrays it outgrew). Consecutive fresh spans of one execution (up to
// spanBatch) are one entry, keyed by the last one's seq (see doc.go);
// a lone span is an entry of its own, keyed by its seq, as is an absent
// one. A span to rewrite (fresh nil: every span is) may sit in a batch
// already: it goes to rewrites, for rewriteSpans.
func (s *Store) encodeSpansInto(spans []Span, fresh []fate, kvs []kv, bufp *[]byte) (_, rewrites []kv, _ error) {
	buf := *bufp
	defer func() { *bufp = buf }()
	enc := getSpanEncoder()
	defer enc.put()
	if cap(enc.calls) < len(spans) {
		enc.calls = make([]spanCall, 0, len(spans))
	}
	for i := 0; i < len(spans); {
		sp := &spans[i]
		enc.deriveFor(sp.Task, sp.Execution)
		n := 1
		if fresh != nil && fresh[i] == fateFresh {
			for n < spanBatch && i+n < len(spans) && fresh[i+n] == fateFresh && spans[i+n].Seq > spans[i+n-1].Seq &&
				spans[i+n].Task == sp.Task && spans[i+n].Execution == sp.Execution {
				n++
			}
		}
		last := &spans[i+n-1]
		start := len(buf)
		buf = spanKeyInto(buf, last.Task, last.Execution, last.Seq)
		mid := len(buf)
		buf = append(buf, schemaVersion)
		var err error
		if buf, err = enc.appendBatch(buf, spans[i:i+n]); err != nil {
			return nil, nil, err
		}
		js := buf[mid+1:]
		red, err := s.red.redactJSONScanned(js, enc.hintScan(s.red.hints, buf, mid+1))
		if err != nil {
			return nil, nil, err
		}
		if len(red) != len(js) || &red[0] != &js[0] { // redacted: a new value
			buf = append(buf[:mid+1], red...)
		}
		// When buf grows it moves; earlier slices keep the old array,
		// which nothing writes to again.
		e := kv{k: buf[start:mid:mid], v: buf[mid:len(buf):len(buf)]}
		if fresh != nil && fresh[i] != fateRewrite {
			kvs = append(kvs, e)
		} else {
			rewrites = append(rewrites, e)
		}
		i += n
	}
	kvs, buf = usageKVs(spans, enc.calls, kvs, buf)
	return kvs, rewrites, nil
}

// spanCall is a span's provider call, if it is one (ok).
type spanCall struct {
	c  CallUsage
	ok bool
}

// appendBatch appends the JSON of a span entry holding spans, of one
// execution: an object for one span, an array of objects that carry
// their seqs for more (see spanbatch.go). It notes their calls (e.calls)
// and the segments of their bodies around their times (e.segs).
func (e *spanEncoder) appendBatch(buf []byte, spans []Span) (_ []byte, err error) {
	e.segs = e.segs[:0]
	if len(spans) == 1 {
		if buf, err = e.appendEntrySpan(append(buf, '{'), &spans[0]); err != nil {
			return nil, err
		}
		return append(buf, '}'), nil
	}
	buf = append(buf, '[')
	for j := range spans {
		if j > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"seq":`...)
		buf = strconv.AppendUint(buf, spans[j].Seq, 10)
		if buf, err = e.appendEntrySpan(append(buf, ','), &spans[j]); err != nil {
			return nil, err
		}
		buf = append(buf, '}')
	}
	return append(buf, ']'), nil
}

// appendEntrySpan is appendSpanBody for appendBatch, noting the span's
// call and segments.
func (e *spanEncoder) appendEntrySpan(buf []byte, sp *Span) (_ []byte, err error) {
	body := len(buf)
	if buf, err = e.appendSpanBody(buf, sp); err != nil {
		return nil, fmt.Errorf("span %d of execution %q: %w", sp.Seq, sp.Execution, err)
	}
	e.calls = append(e.calls, spanCall{e.call, e.callOK})
	e.segs = append(e.segs, [2]int{body, e.timesLo}, [2]int{e.timesHi, len(buf)})
	return buf, nil
}

// checkSpan checks a span whose ids are all set.
func checkSpan(sp *Span) error {
	if err := checkSpanIDs(sp, true, true); err != nil {
		return err
	}
	return checkSpanFields(sp)
}

// checkSpanIDs checks a span's parent id, and its trace and span ids
// if traceID and spanID say so.
func checkSpanIDs(sp *Span, traceID, spanID bool) error {
	where := func(err error) error {
		return fmt.Errorf("span %d of execution %q: %w", sp.Seq, sp.Execution, err)
	}
	if traceID {
		if err := validHexID("trace id", sp.TraceID, 16); err != nil {
			return where(err)
		}
	}
	if spanID {
		if err := validHexID("span id", sp.SpanID, 8); err != nil {
			return where(err)
		}
	}
	if sp.ParentSpanID != "" {
		if err := validHexID("parent span id", sp.ParentSpanID, 8); err != nil {
			return where(err)
		}
	}
	return nil
}

// checkSpanFields checks what of a span is not an id.
func checkSpanFields(sp *Span) error {
	where := func(err error) error {
		return fmt.Errorf("span %d of execution %q: %w", sp.Seq, sp.Execution, err)
	}
	if sp.Name == "" {
		return where(errors.New("name is empty"))
	}
	switch sp.Kind {
	case "", SpanInternal, SpanServer, SpanClient, SpanProducer, SpanConsumer:
	default:
		return where(fmt.Errorf("unknown kind %q", sp.Kind))
	}
	switch sp.Status.Code {
	case "", CodeUnset, CodeOK, CodeError:
	default:
		return where(fmt.Errorf("unknown status code %q", sp.Status.Code))
	}
	if sp.Start.IsZero() {
		return where(errors.New("start time is missing"))
	}
	// appendTime writes another year as no reader reads it.
	if !utcYearIn(sp.Start) || !utcYearIn(sp.End) {
		return where(errors.New("a time's year in UTC is outside 0 to 9999"))
	}
	if !sp.End.IsZero() && sp.End.Before(sp.Start) {
		return where(errors.New("ends before it starts"))
	}
	if err := checkAttributes(sp.Attributes); err != nil {
		return where(err)
	}
	if sp.Call != nil {
		if err := sp.Call.check(); err != nil {
			return where(err)
		}
		for k := range sp.Attributes {
			if _, ok := sp.Call.attr(k); ok {
				return where(fmt.Errorf("attribute %q is both in the map and the call's", k))
			}
		}
	}
	for _, l := range sp.Links {
		if err := validHexID("link trace id", l.TraceID, 16); err != nil {
			return where(err)
		}
		if err := validHexID("link span id", l.SpanID, 8); err != nil {
			return where(err)
		}
		if err := checkAttributes(l.Attributes); err != nil {
			return where(err)
		}
	}
	return nil
}

func checkAttributes(a Attributes) error {
	for k, v := range a {
		if k == "" {
			return errors.New("attribute with an empty key")
		}
		if v.kind == KindEmpty {
			return fmt.Errorf("attribute %q has no value", k)
		}
		if v.kind == KindFloat && (math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0)) {
			return fmt.Errorf("attribute %q: %w", k, errNotFinite)
		}
	}
	return nil
}

// writeKVs commits key-values in as few transactions as Badger allows.
func (s *Store) writeKVs(ctx context.Context, kvs []kv) error {
	s.marks.noteAll() // raw entries may stage usage of any task (markWatch)
	if err := s.settle(); err != nil {
		return err
	}
	return s.writeSpanKVs(ctx, kvs, nil)
}

// writeSpanKVs is writeKVs that also writes spans to rewrite (see
// rewriteSpans), in the last transaction.
func (s *Store) writeSpanKVs(ctx context.Context, kvs, rewrites []kv) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.wmu.RLock()
	defer s.wmu.RUnlock()
	txn := s.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	if err := placeUsage(txn, kvs); err != nil {
		return err
	}
	for _, e := range kvs {
		err := setSpanKV(txn, e, len(rewrites) > 0)
		if errors.Is(err, badger.ErrTxnTooBig) {
			if err := txn.Commit(); err != nil {
				return err
			}
			txn = s.db.NewTransaction(true)
			err = setSpanKV(txn, e, len(rewrites) > 0)
		}
		if err != nil {
			return err
		}
	}
	if err := rewriteSpans(txn, rewrites); err != nil {
		return err
	}
	return txn.Commit()
}

// Spans reads one execution's spans in sequence order.
func (s *Store) Spans(ctx context.Context, task, exec string) ([]Span, error) {
	if err := validID("task id", task); err != nil {
		return nil, fmt.Errorf("read spans: %w", err)
	}
	if err := validID("execution id", exec); err != nil {
		return nil, fmt.Errorf("read spans: %w", err)
	}
	var out []Span
	err := s.scan(ctx, spanPrefix(task, exec), func(key, val []byte) error {
		var err error
		out, err = appendDecodedSpans(out, key, val)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read spans of execution %q: %w", exec, err)
	}
	return out, nil
}

// scan calls fn for every key under prefix, in key order.
func (s *Store) scan(ctx context.Context, prefix []byte, fn func(key, val []byte) error) error {
	return s.view(ctx, func(txn *badger.Txn) error {
		return scanTxn(ctx, txn, prefix, fn)
	})
}

func scanTxn(ctx context.Context, txn *badger.Txn, prefix []byte, fn func(key, val []byte) error) error {
	return scanTxnSkip(ctx, txn, prefix, nil, fn)
}

// scanTxnSkip is scanTxn that does not read the values of keys skip
// accepts (their values are neither prefetched nor decoded).
func scanTxnSkip(ctx context.Context, txn *badger.Txn, prefix []byte, skip func(key []byte) bool, fn func(key, val []byte) error) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	if skip != nil {
		opts.PrefetchValues = false
	}
	it := txn.NewIterator(opts)
	defer it.Close()
	n := 0
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		if n++; n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		item := it.Item()
		if skip != nil && skip(item.Key()) {
			continue
		}
		var ferr error
		if err := item.Value(func(val []byte) error { ferr = fn(item.Key(), val); return nil }); err != nil {
			return asDamage(item.KeyCopy(nil), err)
		}
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// Checkpoint commits the run state of an execution after a completed
// step, together with the spans of that step, in one transaction, and
// (unless the store was opened WithSyncCheckpoints(false)) waits until it
// is on disk. Concurrent checkpoints share an fsync.
func (s *Store) Checkpoint(ctx context.Context, c *Checkpoint, spans ...Span) error {
	return s.checkpoint(ctx, c, nil, "", spans)
}

// CheckpointExecution is Checkpoint that also updates the checkpoint's
// execution in the same transaction: update changes the stored execution
// (its status, end and error when the run ends), which is then checked
// and written as PutExecution writes it. A run's last checkpoint and its
// final status are then one write. update keeps no pointer to the
// execution it is given: the store reuses it.
func (s *Store) CheckpointExecution(ctx context.Context, c *Checkpoint, update func(*Execution), spans ...Span) error {
	return s.checkpoint(ctx, c, update, "", spans)
}

// FinishExecution is CheckpointExecution that also sets the task's status
// to st, as SetTaskStatus does, in the same transaction: a run's last
// checkpoint, its execution's end and its task's status are one write,
// so a crash leaves the run before its end or past it, never between.
func (s *Store) FinishExecution(ctx context.Context, c *Checkpoint, update func(*Execution), st Status, spans ...Span) error {
	if !st.Valid() {
		return fmt.Errorf("write checkpoint of execution %q: unknown status %q", c.Execution, st)
	}
	return s.checkpoint(ctx, c, update, st, spans)
}

// checkpoint is Checkpoint, CheckpointExecution (update not nil) and
// FinishExecution (status not "").
func (s *Store) checkpoint(ctx context.Context, c *Checkpoint, update func(*Execution), status Status, spans []Span) error {
	if s.ro {
		return fmt.Errorf("write checkpoint: store %s: %w", s.dir, ErrReadOnly)
	}
	if c.Updated.IsZero() {
		c.Updated = s.Now()
	}
	c.Updated = c.Updated.UTC()
	if err := validID("task id", c.Task); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	if err := validID("execution id", c.Execution); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	where := func(err error) error {
		return fmt.Errorf("write checkpoint of execution %q: %w", c.Execution, err)
	}
	// Redact the state itself: inside the JSON value it is base64.
	state, err := s.red.redactOpaque(c.State)
	if err != nil {
		return where(err)
	}
	cc := *c
	cc.State = state
	// The checkpoint's spans and value are encoded into one recycled
	// scratch, which goes back once the journal has copied them.
	sc := checkpointScratches.Get().(*checkpointScratch)
	defer sc.put()
	if sc.buf == nil {
		sc.buf = getSpanBuf()
	}
	kvs, rewrites := sc.kvs[:0], []kv(nil)
	if len(spans) > 0 {
		var small [8]fate
		fates := small[:0]
		if len(spans) > len(small) {
			fates = make([]fate, 0, len(spans))
		}
		fates = fates[:len(spans)]
		if err := s.checkSpans(ctx, spans, fates); err != nil {
			return where(err)
		}
		if kvs, rewrites, err = s.encodeSpansInto(spans, fates, kvs, sc.buf); err != nil {
			return where(err)
		}
	}
	start := len(*sc.buf)
	if *sc.buf, err = appendCheckpoint(*sc.buf, &cc); err != nil {
		return where(err)
	}
	rec := jrec{task: c.Task, exec: c.Execution, cp: (*sc.buf)[start:len(*sc.buf):len(*sc.buf)],
		kvs: kvs, rewrites: rewrites, status: status, sum: s.seqs.sumOf(c.Task, c.Execution)}
	ended := false
	switch {
	case update != nil:
		if rec.execVal, rec.sumExec, ended, err = s.updatedExecution(ctx, c.Task, c.Execution, update, sc); err != nil {
			return where(err)
		}
	case len(spans) == 0 && !s.jr.hasExecution(c.Task, c.Execution): // checkSpans checked the execution otherwise
		if err := s.mustExist(ctx, execKey(c.Task, c.Execution), "execution %q of task %q", c.Execution, c.Task); err != nil {
			return where(err)
		}
	}
	if status != "" && !s.jr.hasTask(c.Task) {
		if err := s.mustExist(ctx, taskKey(c.Task), "task %q", c.Task); err != nil {
			return where(fmt.Errorf("update task %q: %w", c.Task, err))
		}
	}
	// The checkpoint commits to the journal (journal.go); the applier
	// moves it into Badger, and every read sees it meanwhile.
	failpoint.Hit(failpoint.CheckpointCommit)
	hook(failpoint.CheckpointCommit)
	lsn, err := s.jr.appendCheckpoint(&rec)
	if err != nil {
		return where(err)
	}
	if ended {
		s.seqs.forget(c.Task, c.Execution)
	}
	failpoint.Hit(failpoint.CheckpointCommitted)
	hook(failpoint.CheckpointCommitted)
	if !s.noSync {
		if err := s.jr.waitSynced(lsn); err != nil {
			return where(err)
		}
	}
	failpoint.Hit(failpoint.CheckpointSynced)
	hook(failpoint.CheckpointSynced)
	return nil
}

// updatedExecution reads an execution (the journal's latest value of it,
// else Badger's), changes it with update and checks it: it returns the
// new value (carved from sc) and summary entry, and whether the
// execution ended.
func (s *Store) updatedExecution(ctx context.Context, task, id string, update func(*Execution), sc *checkpointScratch) (val, sum []byte, ended bool, err error) {
	ex := &sc.ex // update keeps no pointer to it (CheckpointExecution)
	if v := s.jr.execution(task, id); v != "" {
		err = decodeExecutionText(v, ex, task, id)
	} else {
		key := execKey(task, id)
		err = s.viewRaw(ctx, func(txn *badger.Txn) error {
			return getWith(txn, key, func(val []byte) error { return decodeExecution(key, val, ex, task, id) })
		})
	}
	if errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("execution %q of task %q: %w", id, task, ErrNotFound)
	}
	if err != nil {
		return nil, nil, false, err
	}
	update(ex)
	if ex.Task != task || ex.ID != id {
		return nil, nil, false, fmt.Errorf("the execution's task and id cannot change (to %q, %q)", ex.Task, ex.ID)
	}
	if ex.Status == "" {
		ex.Status = StatusRunning
	}
	ex.Started, ex.Ended = ex.Started.UTC(), ex.Ended.UTC()
	if err := checkExecution(ex); err != nil {
		return nil, nil, false, err
	}
	if val, err = sc.carve(func(b []byte) ([]byte, error) { return s.appendExecutionValue(b, ex) }); err != nil {
		return nil, nil, false, err
	}
	sum = sc.carveKey(func(b []byte) []byte { return appendSumExecValue(b, ex) })
	return val, sum, ex.Status == StatusCompleted || ex.Status == StatusFailed, nil
}

// mustExist fails with ErrNotFound, described by format and args, when
// key is not in Badger. The journal's tasks and executions (Begin's) are
// looked for first by the caller (hasTask, hasExecution).
func (s *Store) mustExist(ctx context.Context, key []byte, format string, args ...any) error {
	return s.viewRaw(ctx, func(txn *badger.Txn) error {
		ok, err := exists(txn, key)
		if err == nil && !ok {
			err = fmt.Errorf(format+": %w", append(args, ErrNotFound)...)
		}
		return err
	})
}

// LatestCheckpoint reads the last checkpoint of an execution;
// ErrNotFound if it has none.
func (s *Store) LatestCheckpoint(ctx context.Context, task, exec string) (*Checkpoint, error) {
	if err := validID("task id", task); err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	if err := validID("execution id", exec); err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	var c Checkpoint
	err := s.view(ctx, func(txn *badger.Txn) error {
		err := get(txn, checkpointKey(task, exec), &c)
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		// None of its own: the one its execution's record holds, if any
		// (execfold.go).
		var f struct {
			Checkpoint *Checkpoint `json:"checkpoint"`
		}
		key := execKey(task, exec)
		if err := get(txn, key, &f); err != nil {
			return err
		}
		if f.Checkpoint == nil {
			return ErrNotFound
		}
		c = *f.Checkpoint
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read checkpoint of execution %q: %w", exec, err)
	}
	return &c, nil
}

// seqCounters hands out span sequence numbers per execution. An
// execution's counter starts from its last stored span the first time
// this process writes to it.
type seqCounters struct {
	mu sync.Mutex
	m  map[seqID]*execSeq
	// room holds counters not handed out yet, made many at once for
	// Begin's executions (fresh): each is handed out once.
	room []execSeq
}

type execSeq struct {
	mu       sync.Mutex
	last     uint64
	traceID  string // the derived trace id of the execution
	spanBase uint64 // for derived span ids
	// empty says the execution had no spans when the counter was made
	// (fresh); low is then the lowest seq handed out or staged since (0:
	// none), so no entry holds a seq below it.
	empty bool
	low   uint64
	// sum is the prefix of the task's summary when Begin wrote it (else
	// nil: a write reads the task's record, sumAt).
	sum []byte
}

// assign numbers sp if it has no seq, and says how it is written: fresh
// if its seq is past every seq of the execution handed out or seen so
// far, absent if no entry can hold it, else rewritten.
func (e *execSeq) assign(sp *Span) fate {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := fateFresh
	switch {
	case sp.Seq == 0:
		e.last++
		sp.Seq = e.last
	case sp.Seq > e.last:
		e.last = sp.Seq
	case e.empty && sp.Seq < e.low:
		f = fateAbsent
	default:
		f = fateRewrite
	}
	if e.low == 0 || sp.Seq < e.low {
		e.low = sp.Seq
	}
	return f
}

// seqID names an execution's counter.
type seqID struct{ task, exec string }

func (c *seqCounters) get(ctx context.Context, s *Store, task, exec string) (*execSeq, error) {
	id := seqID{task, exec}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[id]; ok {
		return e, nil
	}
	e := &execSeq{traceID: TraceIDFor(task, exec), spanBase: spanIDBase(task, exec)}
	err := s.view(ctx, func(txn *badger.Txn) error {
		if ok, err := exists(txn, execKey(task, exec)); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("execution %q of task %q: %w", exec, task, ErrNotFound)
			}
			return err
		}
		prefix := spanPrefix(task, exec)
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Reverse = true
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		it.Seek(append(slices.Clone(prefix), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
		if it.ValidForPrefix(prefix) {
			k := it.Item().Key()
			e.last = binary.BigEndian.Uint64(k[len(k)-8:])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = make(map[seqID]*execSeq)
	}
	c.m[id] = e
	return e, nil
}

// staged notes span seq of an execution written by StageSpans: its
// counter (made without looking at the store, like fresh) numbers on from
// the highest.
func (c *seqCounters) staged(task, exec string, seq uint64) {
	id := seqID{task, exec}
	c.mu.Lock()
	e, ok := c.m[id]
	if !ok {
		if c.m == nil {
			c.m = make(map[seqID]*execSeq)
		}
		e = &execSeq{traceID: TraceIDFor(task, exec), spanBase: spanIDBase(task, exec)}
		c.m[id] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	e.last = max(e.last, seq)
	if e.low == 0 || seq < e.low {
		e.low = seq
	}
	e.mu.Unlock()
}

// fresh notes an execution created just now with its task, whose
// summary is at sum, which has no spans: its first spans need not look
// for the last one stored, nor a span below every seq written since for
// an entry holding it. trace is TraceIDFor(task, exec).
func (c *seqCounters) fresh(task, exec string, sum []byte, trace string) {
	id := seqID{task, exec}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; ok {
		return
	}
	if c.m == nil {
		c.m = make(map[seqID]*execSeq)
	}
	if len(c.room) == 0 {
		c.room = make([]execSeq, 32)
	}
	e := &c.room[0]
	c.room = c.room[1:]
	e.traceID, e.spanBase, e.empty, e.sum = trace, spanIDBase(task, exec), true, sum
	c.m[id] = e
}

// sumOf is where the summary of an execution's task is, if this process
// knows (see execSeq.sum), else nil.
func (c *seqCounters) sumOf(task, exec string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[seqID{task, exec}]; ok {
		return e.sum
	}
	return nil
}

// moved forgets where task's summary is: it is moving.
func (c *seqCounters) moved(task string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, e := range c.m {
		if id.task == task {
			e.sum = nil
		}
	}
}

func (c *seqCounters) forget(task, exec string) {
	c.mu.Lock()
	delete(c.m, seqID{task, exec})
	c.mu.Unlock()
}

func (c *seqCounters) reset() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}

// appendSpanBody writes a span's fields (without task, execution and
// seq, which its key holds), trace and span ids included. It is on the
// hot path of span writing, so it avoids reflection; the output is what
// encoding/json would produce for the same fields.
func appendSpanBody(b []byte, sp *Span) ([]byte, error) {
	e := getSpanEncoder()
	defer e.put()
	// A recycled encoder may still name the execution a burst had it
	// derive ids for: these bytes are a new encoder's, every id written.
	e.derived = false
	return e.appendSpanBody(b, sp)
}

// spanEncoders recycles encoders, so that their scratch has grown to a
// span's attributes once rather than for every checkpoint (a burst of
// one or two spans). An encoder is one goroutine's at a time: the
// journal's applier and the writers encode at once. What an encoder
// remembers (the keys written last, a second, an execution's ids) only
// spares work: the bytes are those a new encoder writes.
var spanEncoders = sync.Pool{New: func() any { return new(spanEncoder) }}

// getSpanEncoder returns an encoder from spanEncoders.
func getSpanEncoder() *spanEncoder { return spanEncoders.Get().(*spanEncoder) }

// maxPooledAttrs is the most attributes of the scratch an encoder keeps
// when it goes back: one span's thousands do not stay pinned.
const maxPooledAttrs = 256

// put recycles e, dropping its references to the values encoded (a
// prompt's text, say) and any scratch grown for a span of many
// attributes.
func (e *spanEncoder) put() {
	e.reset()
	spanEncoders.Put(e)
}

// reset is put but for the recycling.
func (e *spanEncoder) reset() {
	if cap(e.keys) > maxPooledAttrs || cap(e.vals) > maxPooledAttrs || cap(e.order) > maxPooledAttrs || cap(e.same) > maxPooledAttrs {
		e.keys, e.vals, e.order, e.same = nil, nil, nil, nil
	}
	if cap(e.sameEnc) > 64<<10 {
		e.sameKeys, e.sameEnc, e.sameEnds = nil, nil, nil
	}
	clear(e.keys[:cap(e.keys)])
	clear(e.vals[:cap(e.vals)])
	clear(e.same[:cap(e.same)])
	e.keys, e.vals, e.order, e.same = e.keys[:0], e.vals[:0], e.order[:0], e.same[:0]
	// A short string may be a slice of a long one (a prompt), which
	// it would keep alive.
	clear(e.sameVals[:])
	clear(e.sameValLen[:])
	if cap(e.calls) > 4*spanChunk {
		e.calls = nil
	}
	e.calls = e.calls[:0]
	if cap(e.segs) > 8*spanChunk || cap(e.scanText) > 256<<10 {
		e.segs, e.scanText = nil, nil
	}
}

// spanEncoder is appendSpanBody with scratch space that a burst's spans
// share (where a span's attributes are sorted) and, once deriveFor has
// named an execution, its derived ids, which a span that has them leaves
// out (layout 6: readers derive them again, see implicitIDs).
type spanEncoder struct {
	keys  []string
	vals  []Value
	order []int
	same  []Value // vals in the order of sameKeys (appendSameKeys)

	// The keys of the attributes written last, in order (at most
	// maxSameKeys), each encoded with its colon into sameEnc, ending at
	// sameEnds: see appendSameKeys.
	sameKeys []string
	sameEnc  []byte
	sameEnds []int
	// The value each of those keys had last, when its encoding is short
	// (sameValLen not 0), and that encoding: a value the spans of a
	// burst share (a model, an operation) is copied, not encoded again.
	sameVals   [maxSameKeys]Value
	sameValLen [maxSameKeys]uint8
	sameValEnc [maxSameKeys][maxCachedValue]byte
	// Where the usage attributes callUsage reads are among sameKeys, and
	// in vals for the attributes written last (-1: absent).
	sameUsage, usage [3]int32

	// The provider call of the span appendSpanBody wrote last, if it is
	// one (see callUsage), and those of a burst's spans so far (see
	// encodeSpansInto).
	call   CallUsage
	callOK bool
	calls  []spanCall

	// Where appendSpanBody wrote the span's times, from the start's
	// quote to past the end's; the segments of a batch's span bodies
	// around their times (see hintScan), the segments hintScan keeps, a
	// byte no hint of sepFor holds (-1: none) and the text it scans.
	timesLo, timesHi int
	segs             [][2]int
	memo             [2]scanMemo
	sepFor           *hintSet
	sep              int
	scanText         []byte

	// The second appendTime wrote last (if secOK), as a quote, a date and
	// a clock.
	sec     int64
	secText [20]byte
	secOK   bool

	derived    bool     // task and exec are set
	task, exec string   // the execution whose ids are left out
	traceID    [32]byte // its derived trace id
	spanBase   uint64   // for its derived span ids
}

// deriveFor makes the encoder leave out the derived ids of the spans of
// the execution from now on.
func (e *spanEncoder) deriveFor(task, exec string) {
	if !implicitIDs {
		e.derived = false // a recycled encoder may have named one
		return
	}
	if e.derived && e.task == task && e.exec == exec {
		return
	}
	e.derived, e.task, e.exec = true, task, exec
	e.traceID, e.spanBase = traceIDHex(task, exec), spanIDBase(task, exec)
}

// implicitIDs is whether span entries leave out derived ids (layout 6).
// A test clears it to write spans as layout 5 did.
var implicitIDs = true

// appendSpanBody is the function appendSpanBody, leaving out the ids
// that are derived from the span's key if deriveFor named its execution.
func (e *spanEncoder) appendSpanBody(b []byte, sp *Span) ([]byte, error) {
	// The ids go first, each with its comma: name, which follows, is
	// never left out.
	mine := e.derived && sp.Task == e.task && sp.Execution == e.exec
	if !mine || sp.TraceID != string(e.traceID[:]) {
		b = append(b, `"trace_id":"`...)
		b = append(b, sp.TraceID...)
		b = append(b, `",`...)
	}
	if !mine || !isDerivedSpanID(sp.SpanID, e.spanBase, sp.Seq) {
		b = append(b, `"span_id":"`...)
		b = append(b, sp.SpanID...)
		b = append(b, `",`...)
	}
	if sp.ParentSpanID != "" {
		b = append(b, `"parent_span_id":"`...)
		b = append(b, sp.ParentSpanID...)
		b = append(b, `",`...)
	}
	b = append(b, `"name":`...)
	b = appendJSONString(b, sp.Name)
	if sp.Kind != "" {
		b = append(b, `,"kind":`...)
		b = appendJSONString(b, string(sp.Kind))
	}
	b = append(b, `,"start":`...)
	e.timesLo = len(b)
	b = e.appendTime(b, sp.Start)
	b = append(b, `,"end":`...)
	b = e.appendTime(b, sp.End)
	e.timesHi = len(b)
	var err error
	e.callOK = false
	if len(sp.Attributes) > 0 || sp.Call != nil {
		b = append(b, `,"attributes":`...)
		if b, err = e.appendAttributes(b, sp.Attributes, sp.Call); err != nil {
			return nil, err
		}
		e.noteCall(sp.Seq)
	}
	if sp.Status != (SpanStatus{}) {
		b = append(b, `,"status":{`...)
		if sp.Status.Code != "" {
			b = append(b, `"code":`...)
			b = appendJSONString(b, string(sp.Status.Code))
		}
		if sp.Status.Message != "" {
			if sp.Status.Code != "" {
				b = append(b, ',')
			}
			b = append(b, `"message":`...)
			b = appendJSONString(b, sp.Status.Message)
		}
		b = append(b, '}')
	}
	if len(sp.Links) > 0 {
		b = append(b, `,"links":[`...)
		for i, l := range sp.Links {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"trace_id":"`...)
			b = append(b, l.TraceID...)
			b = append(b, `","span_id":"`...)
			b = append(b, l.SpanID...)
			b = append(b, '"')
			if len(l.Attributes) > 0 {
				b = append(b, `,"attributes":`...)
				if b, err = e.appendAttributes(b, l.Attributes, nil); err != nil {
					return nil, err
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return b, nil
}

// appendTime writes t as a JSON string in RFC 3339 with nanoseconds, in
// UTC, as encoding/json writes a time.Time's UTC.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	// Written by hand: AppendFormat interprets its layout each time, at
	// a tenth of a span's encoding.
	hour, minute, sec := t.Clock()
	b = append(b, '"')
	b = append4(b, year)
	b = append(b, '-')
	b = append2(b, int(month))
	b = append(b, '-')
	b = append2(b, day)
	b = append(b, 'T')
	b = append2(b, hour)
	b = append(b, ':')
	b = append2(b, minute)
	b = append(b, ':')
	b = append2(b, sec)
	return appendFraction(b, t.Nanosecond())
}

// The first and last second of a UTC year of four digits, in Unix time.
var (
	minYearSec = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxYearSec = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

// utcYearIn is whether t's year in UTC is 0 to 9999, the years appendTime
// writes as RFC 3339 (and encoding/json reads back).
func utcYearIn(t time.Time) bool {
	u := t.Unix()
	return minYearSec <= u && u <= maxYearSec
}

// appendFraction ends a time appendTime writes: its nanoseconds, nine
// digits with trailing zeros dropped (none if zero), Z and the quote.
func appendFraction(b []byte, ns int) []byte {
	if ns != 0 {
		// The first digit, then four pairs, each from a table: fewer
		// dependent divisions than a digit at a time.
		var d [10]byte
		d[0], d[1] = '.', byte('0'+ns/1e8)
		r := ns % 1e8
		copy(d[2:], digitPairs[2*(r/1e6):][:2])
		copy(d[4:], digitPairs[2*(r/1e4%100):][:2])
		copy(d[6:], digitPairs[2*(r/100%100):][:2])
		copy(d[8:], digitPairs[2*(r%100):][:2])
		n := 10
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return append(b, 'Z', '"')
}

// appendTime is the function appendTime, which writes the times of a
// burst's spans, mostly within a few seconds, once per second: the
// quote, date and clock of the last second written are copied.
func (e *spanEncoder) appendTime(b []byte, t time.Time) []byte {
	sec := t.Unix()
	if e.secOK && sec == e.sec {
		b = append(b, e.secText[:]...)
		return appendFraction(b, t.Nanosecond())
	}
	start := len(b)
	b = appendTime(b, t)
	// "YYYY-MM-DDThh:mm:ss then . or Z: no year of more or fewer than
	// four digits, which AppendFormat writes.
	if w := b[start:]; len(w) > len(e.secText) && (w[20] == '.' || w[20] == 'Z') {
		copy(e.secText[:], w)
		e.sec, e.secOK = sec, true
	}
	return b
}

// digitPairs is the two digits of 0 to 99.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }

func append4(b []byte, n int) []byte {
	return append(b, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}

// appendAttributes writes the attributes of c (if not nil) and a as a
// JSON object, its keys sorted, and notes where its usage attributes are
// in e.vals (e.usage).
func (e *spanEncoder) appendAttributes(b []byte, a Attributes, c *CallAttributes) ([]byte, error) {
	// Keys and values copied out, so that sorting moves indexes, not
	// them, and no key is looked up in the map again.
	keys, vals := e.keys[:0], e.vals[:0]
	if c != nil {
		for k, v := range c.each {
			keys = append(keys, k)
			vals = append(vals, v)
		}
	}
	for k, v := range a {
		keys = append(keys, k)
		vals = append(vals, v)
	}
	e.keys, e.vals = keys, vals
	if b, ok, err := e.appendSameKeys(b); ok || err != nil {
		return b, err
	}
	order := e.order[:0]
	for i := range keys {
		order = append(order, i)
	}
	e.order = order
	if len(order) <= 12 || c != nil && len(a) == 0 {
		// Insertion sort: for the few attributes of a span it beats the
		// generic sort, whose comparison is an indirect call (and a
		// call's attributes come sorted).
		for i := 1; i < len(order); i++ {
			for j := i; j > 0 && keys[order[j]] < keys[order[j-1]]; j-- {
				order[j], order[j-1] = order[j-1], order[j]
			}
		}
	} else {
		slices.SortFunc(order, func(x, y int) int { return strings.Compare(keys[x], keys[y]) })
	}
	b = append(b, '{')
	remember := len(order) <= maxSameKeys
	if remember {
		e.sameKeys, e.sameEnc, e.sameEnds = e.sameKeys[:0], e.sameEnc[:0], e.sameEnds[:0]
		e.sameUsage = noUsage
	}
	e.usage = noUsage
	var err error
	for n, i := range order {
		if n > 0 {
			b = append(b, ',')
		}
		start := len(b)
		b = appendJSONString(b, keys[i])
		b = append(b, ':')
		if remember {
			e.sameKeys = append(e.sameKeys, keys[i])
			e.sameEnc = append(e.sameEnc, b[start:]...)
			e.sameEnds = append(e.sameEnds, len(e.sameEnc))
		}
		if u := usageIndex(keys[i]); u >= 0 {
			e.usage[u] = int32(i)
			if remember {
				e.sameUsage[u] = int32(n)
			}
		}
		start = len(b)
		if b, err = vals[i].appendJSON(b); err != nil {
			return nil, fmt.Errorf("attribute %q: %w", keys[i], err)
		}
		if remember {
			e.keepValue(n, vals[i], b[start:])
		}
	}
	return append(b, '}'), nil
}

// maxSameKeys is the most attributes appendSameKeys places by search.
const maxSameKeys = 16

// maxCachedValue is the longest encoded value appendSameKeys keeps.
const maxCachedValue = 48

// keepValue remembers that the value of sameKeys[j] was v, encoded as
// enc, if enc is short and v a scalar.
func (e *spanEncoder) keepValue(j int, v Value, enc []byte) {
	if len(enc) > maxCachedValue || v.kind == KindStrings || v.kind == KindEmpty {
		e.sameValLen[j] = 0
		return
	}
	e.sameVals[j] = v
	e.sameValLen[j] = uint8(copy(e.sameValEnc[j][:], enc))
}

// sameValue reports whether the scalars a and b encode alike: equal
// kinds and bits (equal strings mostly share their bytes, which ==
// compares first).
func sameValue(a, b Value) bool { return a.kind == b.kind && a.n == b.n && a.s == b.s }

// appendSameKeys writes the attributes in e.keys and e.vals when their
// keys are those of the attributes written last (the spans of a burst mostly share their keys): each key
// is found among them, with no sort and no escaping, their encoded forms
// copied, as are the values equal to those written last under the same
// keys. ok is false, and nothing written, when they are not.
func (e *spanEncoder) appendSameKeys(b []byte) (_ []byte, ok bool, _ error) {
	keys := e.sameKeys
	if len(e.keys) != len(keys) || len(keys) == 0 {
		return b, false, nil
	}
	vals := e.same[:0]
	for range keys {
		vals = append(vals, Value{})
	}
	e.same = vals
	for i, k := range e.keys {
		// Keys are constants as a rule: equal strings share their bytes,
		// which == compares first.
		j := 0
		for j < len(keys) && keys[j] != k {
			j++
		}
		if j == len(keys) {
			return b, false, nil
		}
		vals[j] = e.vals[i] // the keys are distinct: j is not taken
	}
	// The values in the order of sameKeys, where e.usage says.
	e.vals, e.same = e.same, e.vals
	e.usage = e.sameUsage
	b = append(b, '{')
	var err error
	start := 0
	for j, end := range e.sameEnds {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, e.sameEnc[start:end]...)
		start = end
		if n := e.sameValLen[j]; n > 0 && sameValue(vals[j], e.sameVals[j]) {
			b = append(b, e.sameValEnc[j][:n]...)
			continue
		}
		at := len(b)
		if b, err = vals[j].appendJSON(b); err != nil {
			return nil, false, fmt.Errorf("attribute %q: %w", keys[j], err)
		}
		e.keepValue(j, vals[j], b[at:])
	}
	return append(b, '}'), true, nil
}

// The usage attributes callUsage reads, by their index in
// spanEncoder.usage.
const (
	usageIn = iota
	usageOut
	usageCost
)

// noUsage is a spanEncoder.usage without usage attributes.
var noUsage = [3]int32{-1, -1, -1}

// usageIndex is the index of key among the usage attributes, or -1.
func usageIndex(key string) int {
	switch key {
	case AttrGenAIUsageInputTokens:
		return usageIn
	case AttrGenAIUsageOutputTokens:
		return usageOut
	case attrCostUSD:
		return usageCost
	}
	return -1
}

// noteCall sets e.call to what callUsage reads from the attributes
// appendAttributes wrote last, those of the span of seq (the values are
// in e.vals, where e.usage says).
func (e *spanEncoder) noteCall(seq uint64) {
	in, out, cost := e.usage[usageIn], e.usage[usageOut], e.usage[usageCost]
	if e.callOK = in >= 0; !e.callOK {
		return
	}
	var outTokens int64
	var costUSD float64
	if out >= 0 {
		outTokens = e.vals[out].Int()
	}
	if cost >= 0 {
		costUSD = e.vals[cost].Float()
	}
	e.call = callUsageOf(seq, e.vals[in].Int(), outTokens, costUSD)
}
