package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The applier moves journaled records into Badger, many runs and steps
// a transaction: when applyThreshold records are pending, when the
// journal has been idle for applyIdle, before a read or a write that
// could see them (settle), and at Close.
const (
	applyThreshold = 1024
	applyBytes     = 16 << 20 // of records pending in the segments
	applyIdle      = 10 * time.Millisecond
	// applyTxnBytes bounds the bytes one apply transaction sets; a
	// batch of more is applied in several, each with its own mark.
	applyTxnBytes = 2 << 20
)

// errJournalClosed fails a write to a journal after Close.
var errJournalClosed = errors.New("journal: closed")

// keyJournal holds the lsn of the last journal record applied, as 8
// bytes big-endian after the schema byte.
const keyJournal = "m/journal"

// settle applies every written journal record, so that a read that
// follows sees it in Badger.
func (s *Store) settle() error {
	if s.jr == nil || s.jr.pending.Load() == 0 {
		return nil
	}
	return s.applyPending()
}

// applyPending applies the records journaled so far and deletes the
// segments that then hold nothing unapplied.
func (s *Store) applyPending() error {
	j := s.jr
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	j.mu.Lock()
	n := len(j.recs)
	batch := j.recs[:n:n]
	j.mu.Unlock()
	if n == 0 {
		return nil
	}
	if err := s.applyRecs(batch); err != nil {
		return fmt.Errorf("apply journal: %w", err)
	}
	if !s.noSync {
		// A segment is deleted only once Badger holds its records on disk.
		if err := s.db.Sync(); err != nil {
			return fmt.Errorf("apply journal: sync: %w", err)
		}
	}
	hook("journal-applied")
	j.mu.Lock()
	j.dropApplied(n)
	del := j.deletable()
	j.mu.Unlock()
	return j.retire(del)
}

// remove unmaps and deletes segments that hold nothing unapplied.
func (j *journal) remove(segs []*segment) error {
	var first error
	for _, sg := range segs {
		err := unmapSegment(sg)
		if rerr := os.Remove(filepath.Join(j.dir, segName(sg.n))); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = rerr
		}
		if err != nil && first == nil {
			first = fmt.Errorf("journal: %w", err)
		}
	}
	return first
}

// dropApplied forgets recs[:n], applied, recycling them. j.mu is held.
func (j *journal) dropApplied(n int) {
	for _, r := range j.recs[:n] {
		id := seqID{r.task, r.exec}
		switch r.kind {
		case kindCheckpoint:
			if j.execs[id] == r {
				delete(j.execs, id)
			}
			if r.begins && j.tasks[r.task] == r {
				delete(j.tasks, r.task)
				j.raiseFloor(pTask, r.task, "/a") // in Badger now, and no longer pending
			}
		case kindRecording:
			if j.rdngs[r.hash] == r {
				delete(j.rdngs, r.hash)
			}
		}
		j.bytes -= r.size
		kvs, rw := r.kvs[:0], r.rewrites[:0]
		clear(r.kvs[:cap(r.kvs)])
		clear(r.rewrites[:cap(r.rewrites)])
		*r = jrec{kvs: kvs, rewrites: rw}
		if len(j.free) < 4096 {
			j.free = append(j.free, r)
		}
	}
	rest := copy(j.recs, j.recs[n:])
	clear(j.recs[rest:])
	j.recs = j.recs[:rest]
	j.pending.Store(int64(len(j.recs)))
	j.drops.Add(1)
}

// dropCount is how many times applied records were dropped (0 for no
// journal): a task that left the pending records is in Badger by then.
func (j *journal) dropCount() uint64 {
	if j == nil {
		return 0
	}
	return j.drops.Load()
}

// deletable removes from j.segs, and returns, the segments that hold no
// unapplied record and take no more: those before the segment of the
// first record left, or before the one being written. j.mu is held.
func (j *journal) deletable() []*segment {
	limit := j.seg
	if len(j.recs) > 0 {
		limit = j.recs[0].seg
	}
	i := 0
	for i < len(j.segs) && j.segs[i].n < limit {
		i++
	}
	out := slices.Clone(j.segs[:i])
	j.segs = append(j.segs[:0], j.segs[i:]...)
	return out
}

// applyRecs writes records into Badger in as few transactions as
// applyTxnBytes allows, each also setting keyJournal to its last record.
// A record that fails alone is logged and skipped: it was checked when
// journaled, and one bad record must not hold back the rest.
func (s *Store) applyRecs(recs []*jrec) error {
	for len(recs) > 0 {
		n, size := 0, 0
		for n < len(recs) && (n == 0 || size < applyTxnBytes) {
			size += recSize(recs[n])
			n++
		}
		err := s.applyTxn(recs[:n])
		if err != nil && n > 1 {
			for i := range n {
				if err := s.applyTxn(recs[i : i+1]); err != nil {
					s.log.Error("a journaled write could not be applied", "lsn", recs[i].lsn, "task", recs[i].task, "err", err)
					if err := s.applyTxn(nil, recs[i].lsn); err != nil {
						return err
					}
				}
			}
		} else if err != nil {
			s.log.Error("a journaled write could not be applied", "lsn", recs[0].lsn, "task", recs[0].task, "err", err)
			if err := s.applyTxn(nil, recs[0].lsn); err != nil {
				return err
			}
		}
		recs = recs[n:]
	}
	return nil
}

func recSize(r *jrec) int {
	n := len(r.cp) + len(r.execVal) + len(r.val) + 64
	for _, e := range r.kvs {
		n += len(e.k) + len(e.v)
	}
	for _, e := range r.rewrites {
		n += len(e.k) + len(e.v)
	}
	return n
}

// applier is one apply transaction: records applied in order, with the
// writes that only their last value matters for (an execution's
// checkpoint and record) and the spans and usage of an execution (each
// merged into one entry) set at the end.
type applier struct {
	s   *Store
	txn *badger.Txn
	// Its maps, from applierMapsPool (applier_maps.go).
	applierMaps
	held  []*jrec  // the recordings setExec folds into one record
	buf   []byte   // merged span and usage values; Badger keeps them until the commit
	keys  keyArena // keys the applier builds
	spare []byte   // a span run's body being rebuilt (addSpans)
	ents  []badger.Entry
	task  Task // the task updateTask changes
	// Room the applier carves its per-task bookkeeping from (carveOne,
	// carveSlice): a transaction holds many runs.
	heldRoom  []heldSum
	unsetRoom []unsetKeys
	linkRoom  []string
}

// applierChunk is how many values carveOne and carveSlice make at once.
const applierChunk = 64

// carveOne returns a zero value from *room, refilled with applierChunk
// of them when empty.
func carveOne[T any](room *[]T) *T {
	if len(*room) == 0 {
		*room = make([]T, applierChunk)
	}
	v := &(*room)[0]
	*room = (*room)[1:]
	return v
}

// carveSlice returns an empty slice with room for n values from *room,
// refilled with applierChunk times n of them when short; appending past
// n moves the slice out.
func carveSlice[T any](room *[]T, n int) []T {
	if len(*room) < n {
		*room = make([]T, applierChunk*n)
	}
	v := (*room)[:0:n]
	*room = (*room)[n:]
	return v
}

// Set sets k to v in the applier's transaction, its Badger entry carved
// out of one array (ents) rather than allocated each (txn.Set): Badger
// keeps the entry until the commit, and the transaction sets thousands.
func (a *applier) Set(k, v []byte) error {
	if len(a.ents) == cap(a.ents) {
		a.ents = make([]badger.Entry, 0, 256)
	}
	a.ents = append(a.ents, badger.Entry{Key: k, Value: v})
	return a.txn.SetEntry(&a.ents[len(a.ents)-1])
}

// key returns an empty slice with room for n bytes (keyArena.room).
func (a *applier) key(n int) []byte { return a.keys.room(n) }

// keyArena carves keys Badger keeps until a commit out of shared arrays
// rather than allocating each; an array is never reused.
type keyArena struct{ b []byte }

// room returns an empty slice with room for n bytes; for a nil arena, a
// new one.
func (ka *keyArena) room(n int) []byte {
	if ka == nil {
		return make([]byte, 0, n)
	}
	if cap(ka.b)-len(ka.b) < n {
		ka.b = make([]byte, 0, max(8<<10, n))
	}
	start := len(ka.b)
	ka.b = ka.b[:start+n]
	return ka.b[start : start : start+n]
}

// spanAcc is a run of fresh span entries of an execution being merged.
type spanAcc struct {
	key   []byte // the last entry's key (its last seq)
	first uint64
	last  uint64
	body  []byte // the spans as batch elements, comma-separated
	n     int    // entries merged
	k     int    // spans merged
	v     []byte // the only entry's value, while n == 1
}

// applyTxn applies recs in one transaction; with no records, it only
// moves the mark to mark[0] (past a record that could not be applied).
func (s *Store) applyTxn(recs []*jrec, mark ...uint64) error {
	s.wmu.RLock()
	defer s.wmu.RUnlock()
	return s.db.Update(func(txn *badger.Txn) error {
		a := applier{s: s, txn: txn}
		m := a.takeMaps()
		last := uint64(0)
		if len(mark) > 0 {
			last = mark[0]
		}
		for _, r := range recs {
			if err := a.apply(r); err != nil {
				return fmt.Errorf("record %d: %w", r.lsn, err)
			}
			last = r.lsn
		}
		err := a.flush()
		a.release()
		a.putMaps(m)
		if err != nil {
			return err
		}
		hook("apply-flushed") // a test's crash point: set, not committed
		v := binary.BigEndian.AppendUint64([]byte{schemaVersion}, last)
		return txn.Set([]byte(keyJournal), v)
	})
}

func (a *applier) apply(r *jrec) error {
	txn := a.txn
	if r.kind == kindRecording {
		if foldParts && mergeLinks && r.task != "" {
			// Its task's execution record may hold it (setExec): flush
			// sets its entry, the last of its hash in the transaction.
			if a.recs == nil {
				a.recs = map[string]*jrec{}
			}
			a.recs[r.hash] = r
		} else {
			delete(a.recs, r.hash) // this write is the last
			if err := a.Set(a.recKey(r.hash), r.val); err != nil {
				return err
			}
		}
		if r.task == "" {
			return nil
		}
		if !mergeLinks {
			return a.Set(linkKey(r.task, r.hash), nil)
		}
		if a.links == nil {
			a.links = map[string][]string{}
		}
		hs := a.links[r.task]
		if hs == nil {
			hs = carveSlice(&a.linkRoom, 8) // a run's links, as a rule
		}
		if !slices.Contains(hs, r.hash) {
			a.links[r.task] = append(hs, r.hash)
		}
		return nil
	}
	id := seqID{r.task, r.exec}
	if r.begins && r.sum == nil {
		r.sum = begunSum(r) // replayed: where its kvs put the summary, as live
	}
	if err := placeUsageAt(txn, r.kvs, r.task, r.sum, &a.keys); err != nil {
		return err
	}
	rewrite := len(r.rewrites) > 0
	if rewrite {
		// A rewrite reads the entries of its execution: those merged so
		// far go in first.
		if err := a.flushUsage(id); err != nil {
			return err
		}
	}
	for _, e := range r.kvs {
		var err error
		switch {
		case isSpanKeyOf(e.k, r.task, r.exec):
			err = a.addSpans(id, e)
		case !rewrite && isUsageKeyOf(e.k, r.task, r.exec):
			err = a.addUsage(id, e)
		case holdSums && r.begins && r.sum != nil && isSumTaskKeyOf(e.k, r.sum):
			if a.sums == nil {
				a.sums = map[string]*heldSum{}
			}
			h := carveOne(&a.heldRoom)
			*h = heldSum{key: e.k, val: e.v}
			h.execs = h.one[:0]
			a.sums[r.task] = h
		case r.begins && isStatusKey(e.k):
			a.keepUnset(r.task, e)
		case r.begins && len(e.k) > len(pSumAt) && string(e.k[:len(pSumAt)]) == pSumAt:
			// x/sat/<task>: a Begin journaled by layout 7, replayed after
			// the migration; layout 8 keeps no such key.
		default:
			err = setSpanKVTo(txn, a, e, rewrite)
		}
		if err != nil {
			return err
		}
	}
	if r.begins && r.begun != nil {
		if a.begun == nil {
			a.begun = map[string]*Task{}
		}
		a.begun[r.task] = r.begun
	}
	if r.begins {
		if a.fresh == nil {
			a.fresh = map[string]string{}
		}
		a.fresh[r.task] = r.exec
		// Usage staged before the task (StageSpans) moves beneath its
		// summary, which the record's kvs just set, as CreateTask moves it.
		p, ok := r.sum, r.sum != nil
		if !ok { // replayed: where the kvs put it
			var err error
			if p, ok, err = sumAt(txn, r.task); err != nil {
				return err
			}
		}
		if ok && a.s.marks.may(txn, r.task) {
			if err := adoptPending(txn, a, r.task, p); err != nil {
				return err
			}
		}
	}
	if rewrite {
		if err := a.flushSpans(id); err != nil {
			return err
		}
		if err := rewriteSpans(txn, r.rewrites); err != nil {
			return err
		}
	}
	if r.status != "" {
		var unset *[]kv
		if u := a.unset[r.task]; u != nil {
			unset = &u.kvs
		}
		// The task as Begin set it, once: the change writes a new one.
		cur := a.begun[r.task]
		delete(a.begun, r.task)
		if err := a.s.updateTask(txn, a, r.task, a.s.setStatus(r.status), unset, cur); err != nil {
			return fmt.Errorf("update task %q: %w", r.task, err)
		}
	}
	if a.cps == nil {
		a.cps, a.exs = map[seqID]*jrec{}, map[seqID]*jrec{}
	}
	a.cps[id] = r
	if r.execVal != nil {
		a.exs[id] = r
	}
	return nil
}

// begunSum is the prefix of the summary a Begin record's kvs write
// (x/sum/<inv:8><task>/a), nil if they write none.
func begunSum(r *jrec) []byte {
	for _, e := range r.kvs {
		k := e.k
		if len(k) == len(pSum)+8+len(r.task)+2 && string(k[:len(pSum)]) == pSum &&
			string(k[len(pSum)+8:len(k)-2]) == r.task && string(k[len(k)-2:]) == "/a" {
			return k[: len(k)-1 : len(k)-1]
		}
	}
	return nil
}

// isSpanKeyOf reports whether k is a span key of the execution (see
// spanKeyInto), without building its prefix.
func isSpanKeyOf(k []byte, task, exec string) bool {
	if len(k) != len(pTask)+len(task)+3+len(exec)+1+8 {
		return false
	}
	if string(k[:len(pTask)]) != pTask {
		return false
	}
	k = k[len(pTask):]
	if string(k[:len(task)]) != task || k[len(task)] != '/' || k[len(task)+1] != subSpan || k[len(task)+2] != '/' {
		return false
	}
	k = k[len(task)+3:]
	return string(k[:len(exec)]) == exec && k[len(exec)] == '/'
}

// mergeLinks is whether the applier writes the recording links of a
// task in one transaction as one entry (layout 7). A test clears it to
// write them as layout 6 did.
var mergeLinks = true

// holdSums is whether the applier writes the executions of a task it
// creates into the task's summary entry (layout 8). A test clears it to
// write them as layout 7 did.
var holdSums = true

// isStatusKey reports whether k is a status index entry (x/status/,
// x/pstat/).
func isStatusKey(k []byte) bool {
	return bytes.HasPrefix(k, []byte(pStatus)) || bytes.HasPrefix(k, []byte(pPipeStatus))
}

// keepUnset keeps a status index entry of a task Begin creates, to be set
// at the end of the transaction (flush) unless a status change in it
// replaces it (updateTask).
func (a *applier) keepUnset(task string, e kv) {
	if a.unset == nil {
		a.unset = map[string]*unsetKeys{}
	}
	u := a.unset[task]
	if u == nil {
		u = carveOne(&a.unsetRoom)
		u.kvs = u.two[:0]
		a.unset[task] = u
	}
	u.kvs = append(u.kvs, e)
}

// unsetKeys are a task's status index entries (two: x/status/, x/pstat/)
// kept to be set at the end of the transaction.
type unsetKeys struct {
	kvs []kv
	two [2]kv
}

// addSpans merges a fresh span entry into its execution's run of
// entries when its spans follow the run's, or come right before them (a
// run's root span, written last with seq 1: no entry holds it, or it
// would not be fresh); otherwise the run is set and the entry starts a
// new one.
func (a *applier) addSpans(id seqID, e kv) error {
	js := e.v[1:]
	last := binary.BigEndian.Uint64(e.k[len(e.k)-8:])
	first, k := last, 1
	if isBatch(js) {
		n, _, ok := cutSeq(js[1:])
		if !ok {
			return a.Set(e.k, e.v)
		}
		// At least the batch's spans: "{\"seq\":" may also open an
		// attribute's object, which only makes the count higher.
		first, k = n, bytes.Count(js, []byte(`{"seq":`))
	}
	if a.accs == nil {
		a.accs = map[seqID]*spanAcc{}
	}
	acc := a.accs[id]
	if acc != nil && acc.n > 0 && first > acc.last && acc.k+k <= spanBatch {
		if acc.n == 1 {
			acc.body = appendElements(acc.body[:0], acc.v, acc.last)
		}
		acc.body = append(acc.body, ',')
		acc.body = appendElements(acc.body, e.v, last)
		acc.key, acc.last, acc.n, acc.k = e.k, last, acc.n+1, acc.k+k
		return nil
	}
	if acc != nil && acc.n > 0 && last+1 == acc.first && acc.k+k <= spanBatch {
		b := appendElements(a.spare[:0], e.v, last)
		b = append(b, ',')
		if acc.n == 1 {
			b = appendElements(b, acc.v, acc.last)
		} else {
			b = append(b, acc.body...)
		}
		a.spare, acc.body = acc.body, b
		acc.first, acc.n, acc.k = first, acc.n+1, acc.k+k
		return nil
	}
	if acc != nil {
		if err := a.setAcc(acc); err != nil {
			return err
		}
	} else {
		acc = accPool.Get().(*spanAcc)
		a.accs[id] = acc
	}
	*acc = spanAcc{key: e.k, first: first, last: last, n: 1, k: k, v: e.v, body: acc.body[:0]}
	return nil
}

// accPool keeps span accumulators, their bodies grown, from one apply
// transaction to the next: a run's merged spans would otherwise regrow
// a body from empty in every transaction. setAcc copies a body into the
// applier's buf, so nothing Badger keeps points into one.
var accPool = sync.Pool{New: func() any { return new(spanAcc) }}

// release returns the applier's accumulators to accPool and usePool
// once flush has set them.
func (a *applier) release() {
	for id, acc := range a.accs {
		*acc = spanAcc{body: acc.body[:0]}
		accPool.Put(acc)
		delete(a.accs, id)
	}
	for id, u := range a.uses {
		*u = usageAcc{body: u.body[:0]}
		usePool.Put(u)
		delete(a.uses, id)
	}
}

// appendElements appends the spans of a span entry value as batch
// elements (a single span gains its seq, the key's).
func appendElements(b, v []byte, seq uint64) []byte {
	js := v[1:]
	if isBatch(js) {
		return append(b, js[1:len(js)-1]...)
	}
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	if len(js) > 2 {
		b = append(b, ',')
	}
	return append(b, js[1:]...)
}

// setAcc sets a run of merged entries as one.
func (a *applier) setAcc(acc *spanAcc) error {
	if acc.n == 0 {
		return nil
	}
	if acc.n == 1 {
		acc.n = 0
		return a.Set(acc.key, acc.v)
	}
	acc.n = 0
	return a.setFramed(acc.key, "[", acc.body, "]")
}

// setFramed sets key to the schema version, pre, body and post, written
// into the applier's shared buffer (a merged entry's value: spans, usage).
func (a *applier) setFramed(key []byte, pre string, body []byte, post string) error {
	size := 1 + len(pre) + len(body) + len(post)
	if cap(a.buf)-len(a.buf) < size {
		a.buf = make([]byte, 0, max(64<<10, size))
	}
	start := len(a.buf)
	a.buf = append(append(a.buf, schemaVersion), pre...)
	a.buf = append(append(a.buf, body...), post...)
	return a.Set(key, a.buf[start:len(a.buf):len(a.buf)])
}

func (a *applier) flushSpans(id seqID) error {
	if acc := a.accs[id]; acc != nil {
		return a.setAcc(acc)
	}
	return nil
}

// flush sets what apply deferred.
func (a *applier) flush() error {
	txn := a.txn
	for _, acc := range a.accs {
		if err := a.setAcc(acc); err != nil {
			return err
		}
	}
	for _, u := range a.unset {
		for _, e := range u.kvs {
			if err := a.Set(e.k, e.v); err != nil {
				return err
			}
		}
	}
	for id, r := range a.exs {
		if err := a.setExec(id, r); err != nil {
			return err
		}
		if h := a.sums[id.task]; h != nil && (r.sum == nil || bytes.HasPrefix(h.key, r.sum)) {
			h.execs = append(h.execs, heldExec{id: id.exec, js: r.sumExec[1:]})
			continue
		}
		p, ok := r.sum, r.sum != nil
		if !ok {
			var err error
			if p, ok, err = sumAt(txn, id.task); err != nil {
				return err
			}
		}
		if ok {
			k := append(append(append(a.key(len(p)+2+len(id.exec)), p...), sumExec, '/'), id.exec...)
			if err := a.Set(k, r.sumExec); err != nil {
				return err
			}
		}
	}
	for h, r := range a.recs {
		var v []byte
		if id, ok := a.recIn[h]; ok {
			v = recordingIndex(a.key(recordingIndexSize(id.task, id.exec)), id.task, id.exec)
		} else {
			v = r.val
		}
		if err := a.Set(a.recKey(h), v); err != nil {
			return err
		}
	}
	for task, hs := range a.links {
		var err error
		if _, ok := a.fresh[task]; ok {
			err = a.Set(linkKey(task, hs[0]), linkValue(slices.Clip(hs[1:])))
		} else {
			err = setLinks(txn, a, task, hs)
		}
		if err != nil {
			return err
		}
	}
	for id, u := range a.uses {
		if h := a.sums[id.task]; h != nil && u.n > 0 && h.addCalls(id.exec, u) {
			continue
		}
		if err := a.setUsage(u); err != nil {
			return err
		}
	}
	for _, h := range a.sums {
		if err := a.setSum(h); err != nil {
			return err
		}
	}
	for id, r := range a.cps {
		if err := a.Set(a.execSubKey(id, subCheckpoint), r.cp); err != nil {
			return err
		}
	}
	return nil
}

// foldParts is whether the applier folds an execution's last checkpoint
// and its task's links into the execution's record when the transaction
// created both (layout 9, execfold.go). A test clears it to write them as
// layout 8 did.
var foldParts = true

// setExec sets the execution record r carries. Folded into it, when this
// transaction's Begin created the execution: its last checkpoint and the
// links of its task, which then get no entries of their own (flush sets
// what is left in a.cps and a.links). Another execution's record may
// hold folded links (an earlier transaction's): they are carried over.
func (a *applier) setExec(id seqID, r *jrec) error {
	key := a.execSubKey(id, subExec)
	if !foldParts {
		return a.Set(key, r.execVal)
	}
	var (
		cp    []byte
		links []string
		tail  []byte
	)
	if exec, ok := a.fresh[id.task]; ok && exec == id.exec {
		if c := a.cps[id]; c != nil {
			cp = c.cp
			delete(a.cps, id)
		}
		links = a.links[id.task]
		delete(a.links, id.task)
		// The recordings the task made, of those it linked: their last
		// write is the task's.
		for _, h := range links {
			if rr := a.recs[h]; rr != nil && rr.task == id.task {
				a.held = append(a.held, rr)
				if a.recIn == nil {
					a.recIn = map[string]seqID{}
				}
				a.recIn[h] = id
			}
		}
	} else {
		// A checkpoint of this transaction has its t/k entry (flush): of
		// what the record holds, only its links go on.
		item, err := a.txn.Get(key)
		if err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
			return asDamage(key, err)
		}
		if err == nil {
			if err := item.Value(func(v []byte) error { tail = bytes.Clone(foldedTail(v, true)); return nil }); err != nil {
				return asDamage(key, err)
			}
		}
	}
	if cp == nil && links == nil && tail == nil {
		return a.Set(key, r.execVal)
	}
	held := a.held
	a.held = a.held[:0]
	size := foldedSize(r.execVal, cp, links, held, tail)
	if cap(a.buf)-len(a.buf) < size {
		a.buf = make([]byte, 0, max(64<<10, size))
	}
	start := len(a.buf)
	a.buf = appendFolded(a.buf, r.execVal, cp, links, held, tail)
	return a.Set(key, a.buf[start:len(a.buf):len(a.buf)])
}

// heldSum is the summary entry of a task created in the transaction
// (key, its value as sumTaskValue wrote it last) and the executions of
// the task the transaction sets, which go in it.
type heldSum struct {
	key, val []byte
	execs    []heldExec
	one      [1]heldExec // execs' room for a run's one execution
}

// heldExec is an execution of a heldSum: its sumExecValue after the
// version byte, and its calls merged in the transaction (usageAcc).
type heldExec struct {
	id    string
	js    []byte
	calls *usageAcc
}

// addCalls puts the calls of u in the entry of execution exec, and
// reports false if the entry holds no such execution.
func (h *heldSum) addCalls(exec string, u *usageAcc) bool {
	for i := range h.execs {
		if h.execs[i].id == exec {
			h.execs[i].calls = u
			return true
		}
	}
	return false
}

// isSumTaskKeyOf reports whether k is the summary entry's key of the
// summary at p (sumTaskKey).
func isSumTaskKeyOf(k, p []byte) bool {
	return len(k) == len(p)+1 && k[len(p)] == sumTask && bytes.HasPrefix(k, p)
}

// holdSum takes val as the summary entry of a task the transaction
// created, and reports false for another task.
func (a *applier) holdSum(task string, key, val []byte) bool {
	h := a.sums[task]
	if h == nil {
		return false
	}
	h.key, h.val = key, val
	return true
}

// releaseSum sets the summary entry of a task the transaction created
// now, and no longer holds it: the summary moves (setTaskDerived).
func (a *applier) releaseSum(task string) error {
	h := a.sums[task]
	if h == nil {
		return nil
	}
	delete(a.sums, task)
	return a.Set(h.key, h.val)
}

// setSum sets a held summary entry with its executions (appendSumExec),
// in id order, in the applier's shared buffer.
func (a *applier) setSum(h *heldSum) error {
	if len(h.execs) == 0 || len(h.val) < 2 || h.val[len(h.val)-1] != '}' {
		return a.Set(h.key, h.val)
	}
	if len(h.execs) > 1 {
		slices.SortFunc(h.execs, func(x, y heldExec) int { return strings.Compare(x.id, y.id) })
	}
	size := len(h.val) + len(execsField) + 2
	for _, x := range h.execs {
		size += len(x.id) + len(x.js) + 24
		if u := x.calls; u != nil {
			size += len(u.v) + len(u.body)
		}
	}
	if cap(a.buf)-len(a.buf) < size {
		a.buf = make([]byte, 0, max(64<<10, size))
	}
	start := len(a.buf)
	b := append(append(a.buf, h.val[:len(h.val)-1]...), execsField...)
	for i, x := range h.execs {
		if i > 0 {
			b = append(b, ',')
		}
		var calls []byte
		if u := x.calls; u != nil {
			if u.n == 1 {
				calls, _ = usageCalls(u.v)
			} else {
				calls = u.body
			}
			u.n = 0
		}
		b = appendSumExec(b, x.id, x.js, calls)
	}
	b = append(b, "]}"...)
	a.buf = b
	return a.Set(h.key, b[start:len(b):len(b)])
}

// recKey is recordingKey(hash), built in the applier's keys.
func (a *applier) recKey(hash string) []byte {
	return append(append(a.key(len(pRec)+len(hash)), pRec...), hash...)
}

// execSubKey is execKey (sub subExec) or checkpointKey (subCheckpoint),
// built in the applier's keys.
func (a *applier) execSubKey(id seqID, sub byte) []byte {
	b := a.key(len(pTask) + len(id.task) + 3 + len(id.exec))
	b = append(append(b, pTask...), id.task...)
	return append(append(b, '/', sub, '/'), id.exec...)
}

// journalMark reads keyJournal: the lsn of the last record applied.
func (s *Store) journalMark() (uint64, error) {
	var mark uint64
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get([]byte(keyJournal))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) error {
			if len(v) != 9 || v[0] != schemaVersion {
				return fmt.Errorf("%s: bad value", keyJournal)
			}
			mark = binary.BigEndian.Uint64(v[1:])
			return nil
		})
	})
	return mark, err
}

// openJournal replays what a killed writer left in the journal into
// Badger, deletes the segments it applied, and starts the journal.
func (s *Store) openJournal() error {
	dir := filepath.Join(s.absDir, journalDirName)
	mark, err := s.journalMark()
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	segs, err := journalSegments(dir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	next, lastSeg := mark+1, uint64(0)
	if n := len(segs); n > 0 {
		lastSeg = segs[n-1]
	}
	if bad, _ := badSegments(dir); bad > lastSeg {
		lastSeg = bad
	}
	var (
		batch    []*jrec
		applied  int
		prevLSN  = mark
		stopped  bool
		applyErr error
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.applyRecs(batch)
		applied += len(batch)
		batch = batch[:0]
		return err
	}
	for i, seg := range segs {
		path := filepath.Join(dir, segName(seg))
		if stopped {
			s.keepBad(path, "it follows a damaged record")
			continue
		}
		bad, torn, err := readSegment(path, seg, func(r *jrec) error {
			if r.lsn <= prevLSN {
				if r.lsn > mark {
					return fmt.Errorf("record %d follows record %d", r.lsn, prevLSN)
				}
				return nil // applied before the crash
			}
			prevLSN = r.lsn
			batch = append(batch, r)
			if len(batch) >= applyThreshold {
				return flush()
			}
			return nil
		})
		if err != nil {
			applyErr = err
			break
		}
		if bad < 0 {
			continue
		}
		stopped = true
		if torn && i == len(segs)-1 {
			s.log.Info("the journal ends in a record cut short by the crash; it was never acknowledged", "segment", segName(seg), "offset", bad)
			continue
		}
		s.log.Warn("the journal is damaged: its records from here on are not applied", "segment", segName(seg), "offset", bad)
		s.keepBad(path, "it holds a damaged record")
	}
	if applyErr == nil {
		applyErr = flush()
	}
	if applyErr != nil {
		return fmt.Errorf("journal: replay: %w", applyErr)
	}
	if prevLSN >= next {
		next = prevLSN + 1
	}
	if len(segs) > 0 {
		if err := s.db.Sync(); err != nil {
			return fmt.Errorf("journal: replay: sync: %w", err)
		}
		for _, seg := range segs {
			if err := os.Remove(filepath.Join(dir, segName(seg))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("journal: %w", err)
			}
		}
		if applied > 0 {
			s.log.Info("applied the run steps a killed sextant left in the journal", "records", applied)
		}
	}
	s.jr = newJournal(dir, !s.noSync, lastSeg, next)
	return nil
}

// keepBad renames a segment that replay could not take whole out of the
// journal's way (NNNNNN.log.bad), as evidence: it is never replayed.
func (s *Store) keepBad(path, why string) {
	if err := os.Rename(path, path+".bad"); err != nil {
		s.log.Error("journal: keep a damaged segment", "file", path, "err", err)
		return
	}
	s.log.Warn("journal segment kept aside, not applied: "+why, "file", path+".bad")
}

// badSegments returns the highest number of a segment kept aside.
func badSegments(dir string) (uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var hi uint64
	for _, e := range entries {
		name, ok := bytes.CutSuffix([]byte(e.Name()), []byte(".log.bad"))
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(string(name), 10, 64); err == nil && n > hi {
			hi = n
		}
	}
	return hi, nil
}

// applyLoop applies the journal in the background: when applyThreshold
// records are pending, or once no record came for applyIdle.
func (s *Store) applyLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	j := s.jr
	t := time.NewTimer(time.Hour)
	t.Stop()
	armed, seen := false, uint64(0)
	for {
		select {
		case <-stop:
			t.Stop()
			return
		case <-j.kick:
			if j.pending.Load() >= applyThreshold || s.journalFull() {
				s.applyBackground()
				continue
			}
			if !armed {
				armed, seen = true, j.appended.Load()
				t.Reset(applyIdle)
			}
		case <-t.C:
			if now := j.appended.Load(); now != seen {
				seen = now
				t.Reset(applyIdle)
				continue
			}
			armed = false
			s.applyBackground()
		}
	}
}

func (s *Store) journalFull() bool {
	s.jr.mu.Lock()
	defer s.jr.mu.Unlock()
	return s.jr.bytes > applyBytes
}

func (s *Store) applyBackground() {
	if err := s.settle(); err != nil {
		s.log.Error("apply the journal", "err", err)
	}
}

// closeJournal applies everything and removes the journal.
func (s *Store) closeJournal() error {
	if s.jr == nil {
		return nil
	}
	if s.stopApply != nil {
		close(s.stopApply)
		<-s.applyDone
	}
	j := s.jr
	// A writer that took room in the current segment writes its record
	// there with no lock held, and a sync runs unlocked too: no new one
	// may start, and those running must be done, before the segments are
	// unmapped.
	j.mu.Lock()
	if j.err == nil {
		j.err = errJournalClosed
	}
	for len(j.inflight) > 0 || j.syncing {
		hook("journal-close-wait")
		if len(j.inflight) > 0 {
			j.pub.Wait()
		} else {
			j.cond.Wait()
		}
	}
	j.mu.Unlock()
	if err := s.settle(); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.recs) > 0 {
		return fmt.Errorf("journal: %d writes were still in progress at close", len(j.recs))
	}
	segs := append(j.segs, j.dropSpares()...)
	j.segs, j.cur, j.err = nil, nil, errJournalClosed
	if err := j.remove(segs); err != nil {
		return err
	}
	if err := os.Remove(j.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		// Segments kept aside (.bad) stay, and with them the directory.
		s.log.Debug("journal directory kept", "err", err)
	}
	return nil
}

// recoverJournal applies the journal a killed writer left, for a reader
// that found no writer: it opens the store for writing (which replays the
// journal) and closes it. A store it cannot open for writing (its
// directory is read-only, another writer came first, damage) is read
// without the journal's records, with a warning saying so.
func (s *Store) recoverJournal(ctx context.Context, dir string) {
	w, err := Open(ctx, dir, Config{clock: s.clock, log: s.log, red: s.red, noSync: s.noSync})
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		var le *LockedError
		if errors.As(err, &le) {
			return // a writer holds it now: it applied the journal, and serves this reader
		}
		s.log.Warn("the store holds run steps a killed sextant left in its journal, which could not be applied: this read leaves them out (open the store for writing to apply them)", "err", err)
	}
}
