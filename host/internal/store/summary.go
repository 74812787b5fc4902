package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
)

// Derived keys answer lists and metrics without reading whole tasks:
// status indexes and a small summary of each task. Every write that
// changes what they derive from writes them in its own transaction (a
// task's status, its executions' end, its rewards, its spans' usage), so
// they are never behind the records; Import and the migration of a store
// of an older layout build them from the records (rebuildDerived), with
// m/derive set meanwhile so that a crash part-way is finished at the
// next writer's Open and readers do not trust them until then.
//
// Summaries are keyed by the task's created time, as the task indexes
// are, so that metrics over the newest tasks read them in one forward
// scan beside the index instead of a seek per task; the writes that know
// only the task id read its created time from its record (sumAt).
// Usage of spans staged before their task is written waits under
// x/spend/ until the task is created (adoptPending).
//
//	x/status/<status>\x00<inv:8><task>             (empty) index: tasks in a status but completed (indexedStatus)
//	x/pstat/<pipeline>\x00<status>\x00<inv:8><task> (empty) index: a pipeline's tasks in a status but completed
//	x/sum/<inv:8><task>/a                          {status, pipeline, version, execs}
//	x/sum/<inv:8><task>/e/<exec>                   {mode, latency_us}: an execution not in a's execs, or newer
//	x/sum/<inv:8><task>/r                          {n, sum}: the task's unnamed rewards
//	x/sum/<inv:8><task>/u/<exec>/<seq:8>           {calls}: usage of provider-call spans, seq first
//	x/spend/<task>                                 (empty) the task has usage waiting for it
//	x/spend/<task>/<exec>/<seq:8>                  {calls}: usage of spans staged before their task
//
// A task's entry (a) holds the executions, each with its calls
// ({id, mode, latency_us, calls}), that the transaction creating the task
// wrote (the applier's, which has a run's pieces together) or that a
// rebuild found: most tasks are one entry. Executions and usage written
// later are entries of their own, which readers take over a's: a later
// update of the task carries a's executions over (carryExecs).
const (
	pStatus     = "x/status/"
	pPipeStatus = "x/pstat/"
	pSum        = "x/sum/"
	pSumAt      = "x/sat/" // layout 7's; rebuildDerived drops it
	pSumPending = "x/spend/"
	keyDerive   = "m/derive"
)

// Sub-keys beneath x/sum/<task>/, in the order a summary is read.
const (
	sumTask   = 'a'
	sumExec   = 'e'
	sumReward = 'r'
	sumUsage  = 'u'
)

// derivedPrefixes are the key ranges rebuildDerived replaces whole.
var derivedPrefixes = []string{pStatus, pPipeStatus, pSumAt, pSum, pSumPending}

// sumPrefix is x/sum/<inv:8><task>/, where the summary of the task
// created then is.
func sumPrefix(created time.Time, task string) []byte {
	return sumPrefixInv(invTime(created), task)
}

func sumPrefixInv(inv uint64, task string) []byte {
	return appendSumPrefixInv(make([]byte, 0, len(pSum)+8+len(task)+40), inv, task)
}

// appendSumPrefix appends sumPrefix(created, task) to b.
func appendSumPrefix(b []byte, created time.Time, task string) []byte {
	return appendSumPrefixInv(b, invTime(created), task)
}

func appendSumPrefixInv(b []byte, inv uint64, task string) []byte {
	b = binary.BigEndian.AppendUint64(append(b, pSum...), inv)
	b = append(b, task...)
	return append(b, '/')
}

// The keys beneath a summary's prefix p (sumPrefix). They append to a
// copy of p.
func sumTaskKey(p []byte) []byte   { return append(slices.Clip(p), sumTask) }
func sumRewardKey(p []byte) []byte { return append(slices.Clip(p), sumReward) }

func sumExecKey(p []byte, exec string) []byte {
	return append(append(slices.Clip(p), sumExec, '/'), exec...)
}

func pendingMarkKey(task string) []byte { return append([]byte(pSumPending), task...) }

func pendingPrefix(task string) []byte {
	return append(append([]byte(pSumPending), task...), '/')
}

// appendPendingUsageKey appends x/spend/<task>/<exec>/<seq:8> to b:
// where usageKVs puts usage, which placeUsage moves beneath the task's
// summary, or leaves waiting for its task.
func appendPendingUsageKey(b []byte, task, exec string, seq uint64) []byte {
	b = append(append(append(append(b, pSumPending...), task...), '/'), exec...)
	return binary.BigEndian.AppendUint64(append(b, '/'), seq)
}

// sumAt returns the prefix of a task's summary, and false if the task
// is not written. Where it is follows from the task's created time,
// read from its record: a task that was left without a summary as
// unreadable has none there, and its readers read its records.
func sumAt(txn *badger.Txn, task string) ([]byte, bool, error) {
	key := taskKey(task)
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var p []byte
	err = item.Value(func(val []byte) error {
		if len(val) > 0 && val[0] == schemaVersion {
			if created, ok := taskCreated(val[1:]); ok {
				p = sumPrefix(created, task)
				return nil
			}
		}
		var v struct {
			Created time.Time `json:"created"`
		}
		if err := decode(key, val, &v); err != nil {
			return err
		}
		p = sumPrefix(v.Created, task)
		return nil
	})
	return p, err == nil, err
}

// taskCreated reads the created time of a task record's JSON, skipping
// the fields before it, and false for anything but encoding/json's
// compact form (the caller then decodes the record).
func taskCreated(js []byte) (time.Time, bool) {
	if len(js) == 0 || js[0] != '{' {
		return time.Time{}, false
	}
	for i := 1; i < len(js); {
		ks, ke, ok := jsonStringAt(js, i)
		if !ok || ke >= len(js) || js[ke] != ':' {
			return time.Time{}, false
		}
		vs := ke + 1
		if string(js[ks:ke]) == `"created"` {
			s, e, ok := jsonStringAt(js, vs)
			if !ok {
				return time.Time{}, false
			}
			t, err := time.Parse(time.RFC3339Nano, string(js[s+1:e-1]))
			return t, err == nil
		}
		ve, ok := skipJSONValue(js, vs, 0)
		if !ok || ve >= len(js) || js[ve] != ',' {
			return time.Time{}, false
		}
		i = ve + 1
	}
	return time.Time{}, false
}

// jsonStringAt returns the bounds of the JSON string at js[i] (quotes
// included), and false if there is none.
func jsonStringAt(js []byte, i int) (start, end int, ok bool) {
	if i >= len(js) || js[i] != '"' {
		return 0, 0, false
	}
	for j := i + 1; j < len(js); j++ {
		switch js[j] {
		case '\\':
			j++
		case '"':
			return i, j + 1, true
		}
	}
	return 0, 0, false
}

// skipJSONValue returns where the compact JSON value at js[i] ends, and false
// if it does not (or nests past 64 levels).
func skipJSONValue(js []byte, i, depth int) (int, bool) {
	if i >= len(js) || depth > 64 {
		return 0, false
	}
	switch c := js[i]; c {
	case '"':
		_, e, ok := jsonStringAt(js, i)
		return e, ok
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i++
		if i < len(js) && js[i] == end {
			return i + 1, true
		}
		for i < len(js) {
			if c == '{' {
				_, ke, ok := jsonStringAt(js, i)
				if !ok || ke >= len(js) || js[ke] != ':' {
					return 0, false
				}
				i = ke + 1
			}
			var ok bool
			if i, ok = skipJSONValue(js, i, depth+1); !ok || i >= len(js) {
				return 0, false
			}
			switch js[i] {
			case ',':
				i++
			case end:
				return i + 1, true
			default:
				return 0, false
			}
		}
		return 0, false
	default: // a number, true, false or null
		j := i
		for j < len(js) && js[j] != ',' && js[j] != '}' && js[j] != ']' {
			j++
		}
		return j, j > i
	}
}

// placeUsage moves the usage entries of kvs (usageKVs) beneath their
// tasks' summaries, in txn, which is to write them; the usage of a task
// without a summary yet (staged spans) stays pending, marked so that the
// task's creation adopts it. Reading the task's record in txn makes a
// commit racing the task's creation a conflict rather than a lost entry.
func placeUsage(txn *badger.Txn, kvs []kv) error { return placeUsageAt(txn, kvs, "", nil, nil) }

// placeUsageAt is placeUsage told that task's summary is at sum (the
// prefix Begin wrote, which this process knows): its usage goes there
// without a read. The keys it builds come from keys (nil: allocated).
func placeUsageAt(txn *badger.Txn, kvs []kv, task string, sum []byte, keys *keyArena) error {
	var (
		prefix     []byte
		looked, ok bool
	)
	if sum != nil {
		prefix, looked, ok = sum, true, true
	}
	for i := range kvs {
		k := kvs[i].k
		if !bytes.HasPrefix(k, []byte(pSumPending)) {
			continue
		}
		rest := k[len(pSumPending):]
		slash := bytes.IndexByte(rest, '/')
		if slash < 0 {
			continue
		}
		if !looked || string(rest[:slash]) != task {
			task, looked = string(rest[:slash]), true
			var err error
			if prefix, ok, err = sumAt(txn, task); err != nil {
				return err
			}
			if !ok {
				if err := txn.Set(pendingMarkKey(task), nil); err != nil {
					return err
				}
			}
		}
		if ok {
			tail := rest[slash+1:]
			nk := keys.room(len(prefix) + 2 + len(tail))
			kvs[i].k = append(append(append(nk, prefix...), sumUsage, '/'), tail...)
		}
	}
	return nil
}

// adoptPending moves usage staged before the task was written beneath
// its summary at p. The key of its mark comes from w's room (roomFor).
func adoptPending(txn *badger.Txn, w setter, task string, p []byte) error {
	mark := append(append(roomFor(w, len(pSumPending)+len(task)), pSumPending...), task...)
	if ok, err := exists(txn, mark); err != nil || !ok {
		return err
	}
	prefix := pendingPrefix(task)
	var moved []kv
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		v, err := item.ValueCopy(nil)
		if err != nil {
			it.Close()
			return err
		}
		moved = append(moved, kv{item.KeyCopy(nil), v})
	}
	it.Close()
	for _, e := range moved {
		if err := txn.Delete(e.k); err != nil {
			return err
		}
		nk := append(append(slices.Clip(p), sumUsage, '/'), e.k[len(prefix):]...)
		if err := txn.Set(nk, e.v); err != nil {
			return err
		}
	}
	return txn.Delete(mark)
}

// moveSummary moves the summary of a task whose created time changed
// from old to p.
func moveSummary(txn *badger.Txn, old, p []byte) error {
	var moved []kv
	opts := badger.DefaultIteratorOptions
	opts.Prefix = old
	it := txn.NewIterator(opts)
	for it.Seek(old); it.ValidForPrefix(old); it.Next() {
		item := it.Item()
		v, err := item.ValueCopy(nil)
		if err != nil {
			it.Close()
			return err
		}
		moved = append(moved, kv{item.KeyCopy(nil), v})
	}
	it.Close()
	for _, e := range moved {
		if err := txn.Delete(e.k); err != nil {
			return err
		}
		if err := txn.Set(append(slices.Clip(p), e.k[len(old):]...), e.v); err != nil {
			return err
		}
	}
	return nil
}

func statusIndexKey(st Status, created time.Time, task string) []byte {
	return fieldIndexKey(pStatus, string(st), created, task)
}

// appendStatusIndexKey appends statusIndexKey(st, created, task) to b.
func appendStatusIndexKey(b []byte, st Status, created time.Time, task string) []byte {
	return appendFieldIndexKey(b, pStatus, string(st), created, task)
}

func pipeStatusPrefix(pipeline string, st Status) []byte {
	return pipeStatusPrefixRoom(pipeline, st, 0)
}

// pipeStatusPrefixRoom is pipeStatusPrefix with room for extra more bytes.
func pipeStatusPrefixRoom(pipeline string, st Status, extra int) []byte {
	b := make([]byte, 0, len(pPipeStatus)+len(pipeline)+1+len(st)+1+extra)
	b = append(append(b, pPipeStatus...), pipeline...)
	b = append(b, 0)
	b = append(b, st...)
	return append(b, 0)
}

func pipeStatusKey(pipeline string, st Status, created time.Time, task string) []byte {
	return appendPipeStatusKey(nil, pipeline, st, created, task)
}

// appendPipeStatusKey appends pipeStatusKey(pipeline, st, created, task)
// to b.
func appendPipeStatusKey(b []byte, pipeline string, st Status, created time.Time, task string) []byte {
	b = slices.Grow(b, len(pPipeStatus)+len(pipeline)+1+len(st)+1+8+len(task))
	b = append(append(append(append(b, pPipeStatus...), pipeline...), 0), st...)
	b = binary.BigEndian.AppendUint64(append(b, 0), invTime(created))
	return append(b, task...)
}

// TaskSummary is what lists and metrics need of a task, read from its
// derived keys (or, in a store that has none, from its records).
type TaskSummary struct {
	ID       string
	Pipeline string
	// Version is the version of the strategy the task ran under.
	Version string
	Status  Status
	Created time.Time
	// Rewards counts the task's rewards of the unnamed dimension;
	// RewardSum adds their values in the order they were given.
	Rewards    int
	RewardSum  float64
	Executions []ExecutionSummary // in id order
}

// ExecutionSummary is what metrics need of an execution.
type ExecutionSummary struct {
	ID   string
	Mode string // "replay" for a replay, "" for a live run
	// Ended says the execution has ended; Latency is then its wall time
	// (Ended - Started), to the microsecond.
	Ended   bool
	Latency time.Duration
	// Calls are the usage of its provider-call spans (those with
	// gen_ai.usage.input_tokens), in sequence order.
	Calls []CallUsage
}

// CallUsage is the usage of one provider call.
type CallUsage struct {
	Seq     uint64
	Tokens  int64   // input plus output tokens
	CostUSD float64 // sextant.cost_usd
}

// callUsage reports a span's usage, if it is a provider call.
func callUsage(sp *Span) (CallUsage, bool) {
	in, ok := sp.LookupAttr(AttrGenAIUsageInputTokens)
	if !ok {
		return CallUsage{}, false
	}
	return callUsageOf(sp.Seq, in.Int(), sp.Attr(AttrGenAIUsageOutputTokens).Int(), sp.Attr(attrCostUSD).Float()), true
}

// callUsageOf is the call of span seq whose usage attributes read as in,
// out and cost (a zero Value's for one it lacks).
func callUsageOf(seq uint64, in, out int64, cost float64) CallUsage {
	if math.IsNaN(cost) || math.IsInf(cost, 0) {
		cost = 0
	}
	return CallUsage{Seq: seq, Tokens: in + out, CostUSD: cost}
}

// attrCostUSD is the cost the proxy and the run engine put on a call span.
const attrCostUSD = "sextant.cost_usd"

// The stored forms. Numbers only, but for the task's: those need no
// redaction and are written without reflection.
type sumTaskVal struct {
	Status   Status `json:"status"`
	Pipeline string `json:"pipeline"`
	Version  string `json:"version,omitempty"`
}

// sumTaskValue is s.encode(sumTaskVal{…}) without reflection: its
// bytes are encoding/json's (TestSumTaskValue), redacted as encode
// redacts them.
func (s *Store) sumTaskValue(t *Task) ([]byte, error) {
	return s.appendSumTaskValue(make([]byte, 0, 48+len(t.Status)+len(t.Pipeline)+len(t.Strategy.Version)), t)
}

// appendSumTaskValue appends sumTaskValue(t) to b.
func (s *Store) appendSumTaskValue(b []byte, t *Task) ([]byte, error) {
	start := len(b)
	b = append(b, schemaVersion)
	b = AppendJSONString(append(b, `{"status":`...), string(t.Status))
	b = AppendJSONString(append(b, `,"pipeline":`...), t.Pipeline)
	if v := t.Strategy.Version; v != "" {
		b = AppendJSONString(append(b, `,"version":`...), v)
	}
	b = append(b, '}')
	js := b[start+1:]
	red, err := s.red.redactJSON(js)
	if err != nil {
		return nil, err
	}
	if len(red) != len(js) || &red[0] != &js[0] { // redacted: a new value
		return append(b[:start+1], red...), nil
	}
	return b, nil
}

// sumExecValue is {"mode":…,"latency_us":…}: mode only when not live,
// latency only once the execution ended.
func sumExecValue(e *Execution) []byte { return appendSumExecValue(make([]byte, 0, 48), e) }

// appendSumExecValue appends sumExecValue(e) to b.
func appendSumExecValue(b []byte, e *Execution) []byte {
	start := len(b)
	b = append(b, schemaVersion, '{')
	if e.Mode != "" && e.Mode != "live" {
		b = append(b, `"mode":`...)
		b = strconv.AppendQuote(b, e.Mode)
	}
	if !e.Ended.IsZero() {
		if len(b) > start+2 {
			b = append(b, ',')
		}
		b = append(b, `"latency_us":`...)
		b = strconv.AppendInt(b, e.Ended.Sub(e.Started).Microseconds(), 10)
	}
	return append(b, '}')
}

func sumRewardValue(n int, sum float64) ([]byte, error) {
	if math.IsNaN(sum) || math.IsInf(sum, 0) {
		return nil, invalidf("the sum of the task's rewards, %v, is not a finite number", sum)
	}
	b := append(make([]byte, 0, 40), schemaVersion)
	b = append(b, `{"n":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"sum":`...)
	b = appendNumber(b, sum)
	return append(b, '}'), nil
}

// sumUsageValue is {"calls":[[seq,tokens,cost],…]}.
func sumUsageValue(calls []CallUsage) []byte {
	b := append(make([]byte, 0, 16+len(calls)*24), schemaVersion)
	b = appendCalls(append(b, usagePrefix...), calls)
	return append(b, usageSuffix...)
}

// appendNumber writes a finite f in the shortest form that reads back
// as f.
func appendNumber(b []byte, f float64) []byte {
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// setTaskDerived writes a task's summary (through w) and status index
// entries (to idx, txn unless the caller keeps them: updateTask); old is
// the task as it was, nil for a task created in txn.
func (s *Store) setTaskDerived(txn *badger.Txn, w setter, idx setter, t, old *Task) error {
	// The applier gives room for the summary's key and value and the
	// status index keys, which it keeps until its commit (roomFor).
	val, err := s.appendSumTaskValue(roomFor(w, 48+len(t.Status)+len(t.Pipeline)+len(t.Strategy.Version)), t)
	if err != nil {
		return err
	}
	b := appendSumPrefix(roomFor(w, len(pSum)+8+len(t.ID)+2), t.Created, t.ID)
	p, key := b[:len(b):len(b)], append(b, sumTask) // b has room for key's last byte
	switch {
	case old == nil:
		if err := adoptPending(txn, w, t.ID, p); err != nil {
			return err
		}
	case invTime(old.Created) != invTime(t.Created):
		s.seqs.moved(t.ID) // the summary moves: no write may use where it was
		if a, ok := w.(*applier); ok {
			if err := a.releaseSum(t.ID); err != nil { // moveSummary reads txn
				return err
			}
		}
		if err := moveSummary(txn, sumPrefix(old.Created, t.ID), p); err != nil {
			return err
		}
	}
	if err := setSumTask(txn, w, t.ID, key, val, old != nil); err != nil {
		return err
	}
	if (old != nil && sameStatusKeys(old, t)) || !indexedStatus(t.Status) {
		return nil
	}
	sk := appendStatusIndexKey(roomFor(w, len(pStatus)+len(t.Status)+1+8+len(t.ID)), t.Status, t.Created, t.ID)
	if err := idx.Set(sk, nil); err != nil {
		return err
	}
	pk := appendPipeStatusKey(roomFor(w, len(pPipeStatus)+len(t.Pipeline)+len(t.Status)+2+8+len(t.ID)), t.Pipeline, t.Status, t.Created, t.ID)
	return idx.Set(pk, nil)
}

// roomFor is an empty slice with room for n bytes: from w's room if it
// has any (the applier's, which keeps them until its commit; idx, where
// updateTask sets status keys, lives as long), else a new one.
func roomFor(w setter, n int) []byte {
	if r, ok := w.(roomer); ok {
		return r.key(n)
	}
	return make([]byte, 0, n)
}

// indexedStatus reports whether tasks in status st have status index
// entries: all but completed ones, which most tasks end as. A list of
// those walks the time or pipeline index and reads each task's status
// from its summary, which finds them about as fast.
func indexedStatus(st Status) bool { return st != StatusCompleted }

// sameStatusKeys reports whether tasks a and b have the same status
// index keys.
func sameStatusKeys(a, b *Task) bool {
	return a.Status == b.Status && a.Pipeline == b.Pipeline && invTime(a.Created) == invTime(b.Created)
}

// setSumTask sets a task's summary entry key to val, a task's status,
// pipeline and version (sumTaskValue), through w. The applier holds the
// entry of a task created in its transaction, to write it once with the
// executions of the transaction in it (applier.setSum). Otherwise an
// existing entry's executions (ts) are carried over: an update of the
// task rewrites the entry, and they are in it alone.
func setSumTask(txn *badger.Txn, w setter, task string, key, val []byte, existing bool) error {
	if a, ok := w.(*applier); ok && a.holdSum(task, key, val) {
		return nil
	}
	if existing {
		var err error
		if val, err = carryExecs(txn, key, val); err != nil {
			return err
		}
	}
	return w.Set(key, val)
}

// execsField opens the executions a summary entry holds, last in it.
// Strings in the entry escape their quotes, so it is found only where
// the field is.
const execsField = `,"execs":[`

// carryExecs returns val with the executions of the summary entry at key
// in txn, if it holds any.
func carryExecs(txn *badger.Txn, key, val []byte) ([]byte, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return val, nil
	}
	if err != nil {
		return nil, err
	}
	out := val
	err = item.Value(func(old []byte) error {
		if len(old) < 2 || old[0] != schemaVersion || old[len(old)-1] != '}' || len(val) < 2 || val[len(val)-1] != '}' {
			return nil
		}
		i := bytes.Index(old, []byte(execsField))
		if i < 0 {
			return nil
		}
		b := make([]byte, 0, len(val)+len(old)-i)
		b = append(append(b, val[:len(val)-1]...), old[i:]...)
		out = b
		return nil
	})
	return out, err
}

// appendSumExec appends an execution's summary as a summary entry holds
// it: {"id":…[,"mode":…][,"latency_us":…][,"calls":[…]]}, where js is
// its sumExecValue after the version byte and calls its calls as
// sumUsageValue lists them, comma-separated.
func appendSumExec(b []byte, id string, js, calls []byte) []byte {
	b = AppendJSONString(append(b, `{"id":`...), id)
	if len(js) > 2 {
		b = append(append(b, ','), js[1:len(js)-1]...)
	}
	if len(calls) > 0 {
		b = append(append(append(b, `,"calls":[`...), calls...), ']')
	}
	return append(b, '}')
}

// appendCalls appends calls as sumUsageValue lists them, comma-separated.
func appendCalls(b []byte, calls []CallUsage) []byte {
	for i, c := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCall(b, c)
	}
	return b
}

// appendCall appends one call as sumUsageValue lists it: [seq,tokens,cost].
func appendCall(b []byte, c CallUsage) []byte {
	b = strconv.AppendUint(append(b, '['), c.Seq, 10)
	b = strconv.AppendInt(append(b, ','), c.Tokens, 10)
	return append(appendNumber(append(b, ','), c.CostUSD), ']')
}

// deleteTaskDerived removes the status index entries of a task as it was
// (t), unless it keeps them as it is now (next). Their keys come from
// w's room (roomFor).
func deleteTaskDerived(txn *badger.Txn, w setter, t, next *Task) error {
	if sameStatusKeys(t, next) || !indexedStatus(t.Status) {
		return nil
	}
	sk := appendStatusIndexKey(roomFor(w, len(pStatus)+len(t.Status)+1+8+len(t.ID)), t.Status, t.Created, t.ID)
	if err := txn.Delete(sk); err != nil {
		return err
	}
	pk := appendPipeStatusKey(roomFor(w, len(pPipeStatus)+len(t.Pipeline)+len(t.Status)+2+8+len(t.ID)), t.Pipeline, t.Status, t.Created, t.ID)
	return txn.Delete(pk)
}

// usageKVs are the usage entries of a burst of encoded spans: one per
// run of spans of the same execution that holds provider calls, keyed by
// the run's first call, under x/spend/ until placeUsage places them.
// Writing the same spans again writes the same entries; readers drop a
// call listed twice (readSummary). spanCalls[i] is spans[i]'s call, as
// callUsage reads it (the encoder notes it, see spanEncoder.noteCall).
// Their keys and values (appendPendingUsageKey, sumUsageValue's bytes)
// are appended to buf, as encodeSpansInto carves the spans': an entry is
// sliced once whole, so growing buf never splits one.
func usageKVs(spans []Span, spanCalls []spanCall, kvs []kv, buf []byte) ([]kv, []byte) {
	start, mid := -1, 0 // the open entry's key and value, in buf
	flush := func() {
		if start >= 0 {
			buf = append(buf, usageSuffix...)
			kvs = append(kvs, kv{buf[start:mid:mid], buf[mid:len(buf):len(buf)]})
			start = -1
		}
	}
	for i := range spans {
		sp := &spans[i]
		if i > 0 && (sp.Task != spans[i-1].Task || sp.Execution != spans[i-1].Execution) {
			flush()
		}
		c := spanCalls[i]
		if !c.ok {
			continue
		}
		if start < 0 {
			start = len(buf)
			buf = appendPendingUsageKey(buf, sp.Task, sp.Execution, c.c.Seq)
			mid = len(buf)
			buf = append(append(buf, schemaVersion), usagePrefix...)
		} else {
			buf = append(buf, ',')
		}
		buf = appendCall(buf, c.c)
	}
	flush()
	return kvs, buf
}

// setRewardSum updates the task's reward count and sum for reward r,
// just added: seq r.Seq, after the rewards up to last. A reward added
// after the last adds to the stored sum, in the order the rewards are
// given, as a reader adding them up would; any other (a rewritten seq, or
// no stored sum) sums them all again.
func setRewardSum(ctx context.Context, txn *badger.Txn, r *Reward, last uint64) error {
	var cur struct {
		N   int     `json:"n"`
		Sum float64 `json:"sum"`
	}
	if r.Dimension != "" {
		return nil // the summary counts the unnamed dimension only
	}
	p, ok, err := sumAt(txn, r.Task)
	if err != nil || !ok {
		return err // no summary: readers add up the records
	}
	key := sumRewardKey(p)
	err = get(txn, key, &cur)
	switch {
	case err == nil && r.Seq > last:
		cur.N++
		cur.Sum += r.Value
	case err == nil || errors.Is(err, ErrNotFound):
		cur.N, cur.Sum = 0, 0
		// The scan sees this transaction's pending write of r.
		err = scanTxn(ctx, txn, rewardPrefix(r.Task), func(k, v []byte) error {
			var rw Reward
			if err := decode(k, v, &rw); err != nil || rw.Dimension != "" {
				return err
			}
			cur.N++
			cur.Sum += rw.Value
			return nil
		})
		if err != nil {
			return err
		}
	default:
		return err
	}
	val, err := sumRewardValue(cur.N, cur.Sum)
	if err != nil {
		return err
	}
	return txn.Set(key, val)
}

// summarizer builds a TaskSummary from a task's records, read in key order.
type summarizer struct {
	ts      TaskSummary
	found   bool
	started map[string]int // execution → index in ts.Executions
}

func (z *summarizer) reset(id string) {
	z.ts = TaskSummary{ID: id}
	z.found = false
	clear(z.started)
}

// wants reports whether the record under sub is one summaries read.
func (z *summarizer) wants(sub []byte) bool {
	switch sub[0] {
	case subTask, subExec, subReward, subSpan:
		return true
	}
	return false
}

// add takes one record of the task: sub is its key from <sub> on.
func (z *summarizer) add(key, sub, val []byte) error {
	switch sub[0] {
	case subTask:
		var t Task
		if err := decode(key, val, &t); err != nil {
			return err
		}
		z.found = true
		z.ts.Pipeline, z.ts.Version, z.ts.Status, z.ts.Created = t.Pipeline, t.Strategy.Version, t.Status, t.Created
	case subExec:
		var e Execution
		if err := decode(key, val, &e); err != nil {
			return err
		}
		if z.started == nil {
			z.started = map[string]int{}
		}
		z.started[e.ID] = len(z.ts.Executions)
		z.ts.Executions = append(z.ts.Executions, execSummary(&e))
	case subReward:
		var r Reward
		if err := decode(key, val, &r); err != nil || r.Dimension != "" {
			return err
		}
		z.ts.Rewards++
		z.ts.RewardSum += r.Value
	case subSpan:
		if !bytes.Contains(val, []byte(AttrGenAIUsageInputTokens)) {
			return nil // not a call: no need to decode it
		}
		spans, err := appendDecodedSpans(nil, key, val)
		if err != nil || len(spans) == 0 {
			return err
		}
		i, ok := z.started[spans[0].Execution]
		if !ok {
			return nil // a staged span of an execution not yet written
		}
		for j := range spans {
			if c, ok := callUsage(&spans[j]); ok {
				z.ts.Executions[i].Calls = append(z.ts.Executions[i].Calls, c)
			}
		}
	}
	return nil
}

func execSummary(e *Execution) ExecutionSummary {
	es := ExecutionSummary{ID: e.ID, Ended: !e.Ended.IsZero()}
	if e.Mode != "live" {
		es.Mode = e.Mode
	}
	if es.Ended {
		es.Latency = e.Ended.Sub(e.Started).Truncate(time.Microsecond)
	}
	return es
}

// summarizeTxn reads a task's summary from its records.
func summarizeTxn(ctx context.Context, txn *badger.Txn, id string) (*TaskSummary, error) {
	var z summarizer
	z.reset(id)
	err := scanTxnSkip(ctx, txn, taskPrefix(id), func(key []byte) bool {
		_, sub, ok := parseTaskSub(key)
		return !ok || !z.wants(sub)
	}, func(key, val []byte) error {
		_, sub, _ := parseTaskSub(key)
		return z.add(key, sub, val)
	})
	if err != nil {
		return nil, err
	}
	if !z.found {
		return nil, ErrNotFound
	}
	ts := z.ts
	return &ts, nil
}

// derivedKVs are the derived keys of a task with summary ts.
func (s *Store) derivedKVs(ts *TaskSummary, kvs []kv) ([]kv, error) {
	t := Task{ID: ts.ID, Pipeline: ts.Pipeline, Status: ts.Status, Created: ts.Created, Strategy: StrategyRef{Version: ts.Version}}
	val, err := s.sumTaskValue(&t)
	if err != nil {
		return nil, err
	}
	p := sumPrefix(ts.Created, ts.ID)
	if len(ts.Executions) > 0 {
		// One entry: the executions, with their calls, in the task's.
		b := append(val[:len(val)-1:len(val)-1], execsField...)
		var calls []byte
		for i := range ts.Executions {
			es := &ts.Executions[i]
			e := Execution{Mode: es.Mode}
			if es.Ended {
				e.Started = time.Unix(0, 0)
				e.Ended = e.Started.Add(es.Latency)
			}
			if i > 0 {
				b = append(b, ',')
			}
			calls = appendCalls(calls[:0], es.Calls)
			b = appendSumExec(b, es.ID, sumExecValue(&e)[1:], calls)
		}
		val = append(b, "]}"...)
	}
	kvs = append(kvs, kv{sumTaskKey(p), val})
	if indexedStatus(ts.Status) {
		kvs = append(kvs, kv{statusIndexKey(ts.Status, ts.Created, ts.ID), nil},
			kv{pipeStatusKey(ts.Pipeline, ts.Status, ts.Created, ts.ID), nil})
	}
	if ts.Rewards > 0 {
		val, err := sumRewardValue(ts.Rewards, ts.RewardSum)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, kv{sumRewardKey(p), val})
	}
	return kvs, nil
}

// readSummary reads a task's summary from its derived keys, using it, an
// iterator over pSum; created is the task's created time (from an index
// key). Summaries are in index order, so a walk of the time index finds
// the iterator already at the next task's summary and need not seek. A
// task without a stored summary is summarized from its records.
func readSummary(ctx context.Context, txn *badger.Txn, it *badger.Iterator, id string, created time.Time) (*TaskSummary, error) {
	prefix := sumPrefix(created, id)
	ts := &TaskSummary{ID: id, Created: created}
	found := false
	// emb counts the calls of each execution the task's entry holds:
	// usage entries are newer, and take a seq both list.
	var emb []int
	if !it.Valid() || !bytes.HasPrefix(it.Item().Key(), prefix) {
		it.Seek(prefix)
	}
	for ; it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		key := item.Key()
		sub := key[len(prefix):]
		err := item.Value(func(val []byte) error {
			switch sub[0] {
			case sumTask:
				found = true
				if err := readSumTask(key, val, ts); err != nil {
					return err
				}
				for i := range ts.Executions {
					if n := len(ts.Executions[i].Calls); n > 0 {
						if emb == nil {
							emb = make([]int, len(ts.Executions))
						}
						emb[i] = n
					}
				}
			case sumExec:
				es := ExecutionSummary{ID: string(sub[2:])}
				ok := false
				if js, err := unseal(key, val); err == nil {
					es.Mode, es.Latency, es.Ended, ok = parseSumExec(js)
				}
				if !ok {
					var v struct {
						Mode      string `json:"mode"`
						LatencyUS *int64 `json:"latency_us"`
					}
					if err := decodeNumbers(key, val, &v); err != nil {
						return err
					}
					es.Mode = v.Mode
					if v.LatencyUS != nil {
						es.Ended, es.Latency = true, time.Duration(*v.LatencyUS)*time.Microsecond
					}
				}
				// An entry of its own is newer than the execution in the
				// task's entry, whose calls stay.
				if i := slices.IndexFunc(ts.Executions, func(x ExecutionSummary) bool { return x.ID == es.ID }); i >= 0 {
					es.Calls = ts.Executions[i].Calls
					ts.Executions[i] = es
					return nil
				}
				ts.Executions = append(ts.Executions, es)
			case sumReward:
				ok := false
				if js, err := unseal(key, val); err == nil {
					ts.Rewards, ts.RewardSum, ok = parseSumReward(js)
				}
				if !ok {
					var v struct {
						N   int     `json:"n"`
						Sum float64 `json:"sum"`
					}
					if err := decodeNumbers(key, val, &v); err != nil {
						return err
					}
					ts.Rewards, ts.RewardSum = v.N, v.Sum
				}
			case sumUsage:
				// Executions sort before usage (e < u): each is known here.
				exec := sub[2 : len(sub)-9]
				i := slices.IndexFunc(ts.Executions, func(es ExecutionSummary) bool { return es.ID == string(exec) })
				if i < 0 {
					return nil // a staged span of an execution not yet written
				}
				return addUsage(id, key, val, &ts.Executions[i])
			}
			return nil
		})
		if err != nil {
			return nil, asDamage(item.KeyCopy(nil), err)
		}
	}
	if !found {
		return summarizeTxn(ctx, txn, id)
	}
	for i, n := range emb {
		if c := ts.Executions[i].Calls; n > 0 && len(c) > n {
			// Usage entries first, so that sorting keeps their calls.
			slices.Reverse(c[:n])
			slices.Reverse(c[n:])
			slices.Reverse(c)
		}
	}
	if !slices.IsSortedFunc(ts.Executions, cmpExecID) {
		slices.SortStableFunc(ts.Executions, cmpExecID)
	}
	for i := range ts.Executions {
		es := &ts.Executions[i]
		if !slices.IsSortedFunc(es.Calls, func(a, b CallUsage) int { return cmpSeq(a.Seq, b.Seq) }) || hasDupSeq(es.Calls) {
			// Spans written again, or bursts out of order: one call per seq.
			slices.SortStableFunc(es.Calls, func(a, b CallUsage) int { return cmpSeq(a.Seq, b.Seq) })
			es.Calls = slices.CompactFunc(es.Calls, func(a, b CallUsage) bool { return a.Seq == b.Seq })
		}
	}
	return ts, nil
}

func cmpExecID(a, b ExecutionSummary) int { return strings.Compare(a.ID, b.ID) }

// readSumTask reads a task's summary entry into ts: its status, pipeline
// and version, and the executions it holds.
func readSumTask(key, val []byte, ts *TaskSummary) error {
	if js, err := unseal(key, val); err == nil {
		if v, execs, ok := parseSumTaskExecs(js, ts.Executions[:0]); ok {
			ts.Status, ts.Pipeline, ts.Version, ts.Executions = v.Status, v.Pipeline, v.Version, execs
			return nil
		}
	}
	var v struct {
		sumTaskVal
		Execs []struct {
			ID        string           `json:"id"`
			Mode      string           `json:"mode"`
			LatencyUS *int64           `json:"latency_us"`
			Calls     [][3]json.Number `json:"calls"`
		} `json:"execs"`
	}
	if err := decode(key, val, &v); err != nil {
		return err
	}
	ts.Status, ts.Pipeline, ts.Version = v.Status, v.Pipeline, v.Version
	ts.Executions = ts.Executions[:0]
	for _, x := range v.Execs {
		es := ExecutionSummary{ID: x.ID, Mode: x.Mode}
		if x.LatencyUS != nil {
			es.Ended, es.Latency = true, time.Duration(*x.LatencyUS)*time.Microsecond
		}
		for _, c := range x.Calls {
			seq, err1 := strconv.ParseUint(string(c[0]), 10, 64)
			tok, err2 := c[1].Int64()
			cost, err3 := c[2].Float64()
			if err := errors.Join(err1, err2, err3); err != nil {
				return &DamageError{Task: ts.ID, Err: fmt.Errorf("decode %s: %w", printableKey(key), err)}
			}
			es.Calls = append(es.Calls, CallUsage{Seq: seq, Tokens: tok, CostUSD: cost})
		}
		ts.Executions = append(ts.Executions, es)
	}
	return nil
}

// addUsage adds the calls of usage entry key (value val) to es.
func addUsage(task string, key, val []byte, es *ExecutionSummary) error {
	js, err := unseal(key, val)
	if err != nil {
		return err
	}
	var ok bool
	if es.Calls, ok = parseSumUsage(js, es.Calls); ok {
		return nil
	}
	var v struct {
		Calls [][3]json.Number `json:"calls"`
	}
	if err := decodeNumbers(key, val, &v); err != nil {
		return err
	}
	for _, c := range v.Calls {
		seq, err1 := strconv.ParseUint(string(c[0]), 10, 64)
		tok, err2 := c[1].Int64()
		cost, err3 := c[2].Float64()
		if err := errors.Join(err1, err2, err3); err != nil {
			return &DamageError{Task: task, Err: fmt.Errorf("decode %s: %w", printableKey(key), err)}
		}
		es.Calls = append(es.Calls, CallUsage{Seq: seq, Tokens: tok, CostUSD: cost})
	}
	return nil
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func hasDupSeq(calls []CallUsage) bool {
	for i := 1; i < len(calls); i++ {
		if calls[i].Seq == calls[i-1].Seq {
			return true
		}
	}
	return false
}

// decodeNumbers is decode for the derived values, which hold numbers.
func decodeNumbers(key, val []byte, v any) error {
	js, err := unseal(key, val)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(js, v); err != nil {
		return &DamageError{Key: printableKey(key), Err: fmt.Errorf("decode %s: %w", printableKey(key), err)}
	}
	return nil
}

// EachSummary calls fn with the summary of each task matching q, newest
// first: its status, pipeline, strategy version, rewards' count and sum,
// executions' latencies and provider calls' usage, read from the derived
// keys without reading the task's records (in a store written before
// them, from the records). q.Match is not supported: it takes a Task.
// Damaged tasks are skipped and reported at the end (a *SkippedError),
// as EachTask reports them.
func (s *Store) EachSummary(ctx context.Context, q Query, fn func(*TaskSummary) error) error {
	if q.Match != nil {
		return fmt.Errorf("list task summaries: a query with Match needs whole tasks (EachTask)")
	}
	if q.Status != "" && !q.Status.Valid() {
		return fmt.Errorf("list task summaries: unknown status %q", q.Status)
	}
	var skipped []*DamageError
	err := s.view(ctx, func(txn *badger.Txn) error {
		var it *badger.Iterator
		if s.indexed {
			opts := badger.DefaultIteratorOptions
			opts.PrefetchValues = false
			opts.Prefix = []byte(pSum)
			it = txn.NewIterator(opts)
			defer it.Close()
		}
		n := 0
		return s.walkIndex(ctx, txn, q, nil, &skipped, func(id string, created time.Time, _ []byte) error {
			var ts *TaskSummary
			var err error
			if it != nil {
				ts, err = readSummary(ctx, txn, it, id, created)
			} else {
				ts, err = summarizeTxn(ctx, txn, id)
			}
			if err != nil {
				if errors.Is(err, ErrNotFound) {
					return nil // an index entry racing a rewrite
				}
				if d := taskDamage(id, err); d != nil {
					skipped = append(skipped, d)
					return nil
				}
				return fmt.Errorf("task %q: %w", id, err)
			}
			if (q.Pipeline != "" && ts.Pipeline != q.Pipeline) || (q.Status != "" && ts.Status != q.Status) {
				return nil
			}
			if err := fn(ts); err != nil {
				return err
			}
			if n++; q.Limit > 0 && n >= q.Limit {
				return errStop
			}
			return nil
		})
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("list task summaries: %w", err)
	}
	if len(skipped) > 0 {
		return &SkippedError{Op: "list task summaries", Skipped: skipped}
	}
	return nil
}

// RewardStats returns the count and the sum of a task's rewards of the
// unnamed dimension (see DimensionStats for the others), from its
// summary (or, in a store written before summaries, its rewards). A task
// without rewards, or unknown, has none.
func (s *Store) RewardStats(ctx context.Context, task string) (n int, sum float64, err error) {
	if err := validID("task id", task); err != nil {
		return 0, 0, fmt.Errorf("read rewards: %w", err)
	}
	err = s.view(ctx, func(txn *badger.Txn) error {
		if s.indexed {
			var v struct {
				N   int     `json:"n"`
				Sum float64 `json:"sum"`
			}
			p, ok, err := sumAt(txn, task)
			if err != nil || !ok {
				return err
			}
			err = get(txn, sumRewardKey(p), &v)
			if errors.Is(err, ErrNotFound) {
				return nil
			}
			n, sum = v.N, v.Sum
			return err
		}
		return scanTxn(ctx, txn, rewardPrefix(task), func(key, val []byte) error {
			var r Reward
			if err := decode(key, val, &r); err != nil || r.Dimension != "" {
				return err
			}
			n++
			sum += r.Value
			return nil
		})
	})
	if err != nil {
		return 0, 0, fmt.Errorf("read rewards of task %q: %w", task, err)
	}
	return n, sum, nil
}

// migrateBatch is how many tasks rebuildDerived summarizes between two
// passes of its failpoint (tests make it small).
var migrateBatch = 4096

// rebuildDerived replaces every derived key with keys built from the
// records. m/derive is set first and cleared (with the layout set to the
// current one) last, in one transaction, so an interrupted rebuild is
// redone whole at the next writer's Open and readers meanwhile do not use
// the derived keys. A task whose records cannot be read is left without
// a summary (readers then read its records, and report the damage).
func (s *Store) rebuildDerived(ctx context.Context) error {
	if err := s.markDeriving(); err != nil {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	// Keys of an earlier, interrupted rebuild, or of writes by a sextant
	// that did not keep them, may be wrong: none is kept.
	for _, p := range derivedPrefixes {
		err := s.db.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.PrefetchValues = false
			opts.Prefix = []byte(p)
			it := txn.NewIterator(opts)
			defer it.Close()
			for it.Seek([]byte(p)); it.ValidForPrefix([]byte(p)); it.Next() {
				if err := wb.Delete(it.Item().KeyCopy(nil)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	var z summarizer
	var kvs []kv
	tasks, damaged := 0, 0
	cur, bad := "", false
	finish := func() error {
		if cur == "" {
			return nil
		}
		if bad || !z.found {
			damaged++
			return nil
		}
		var err error
		if kvs, err = s.derivedKVs(&z.ts, kvs[:0]); err != nil {
			return err
		}
		for _, e := range kvs {
			if err := wb.Set(e.k, e.v); err != nil {
				return err
			}
		}
		if tasks++; tasks%migrateBatch == 0 {
			migrateHook()
		}
		return nil
	}
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte(pTask)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek([]byte(pTask)); it.ValidForPrefix([]byte(pTask)); it.Next() {
			item := it.Item()
			id, sub, ok := parseTaskSub(item.Key())
			if !ok {
				continue
			}
			if id != cur {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := finish(); err != nil {
					return err
				}
				cur, bad = id, false
				z.reset(id)
			}
			if bad || !z.wants(sub) {
				continue
			}
			var ferr error
			if err := item.Value(func(val []byte) error { ferr = z.add(item.Key(), sub, val); return nil }); err != nil || ferr != nil {
				s.log.Warn("task left without a summary: a record does not read", "task", id, "err", errors.Join(err, ferr))
				bad = true
			}
		}
		return finish()
	})
	if err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	if err := s.setLayout(); err != nil {
		return err
	}
	s.log.Info("store indexes built", "tasks", tasks, "unreadable", damaged)
	return nil
}

// migrateHook marks a batch of rebuildDerived (crash tests stop there).
func migrateHook() { failpoint.Hit(failpoint.StoreMigrate) }

// markDeriving sets m/derive: the derived keys are being rebuilt.
func (s *Store) markDeriving() error {
	val := append([]byte{schemaVersion}, "{}"...)
	if err := s.updateOnce(func(txn *badger.Txn) error { return txn.Set([]byte(keyDerive), val) }); err != nil {
		return err
	}
	return s.db.Sync()
}

// setLayout records the current layout, with every derived key in place.
func (s *Store) setLayout() error {
	val, err := s.encode(storeMeta{Layout: layoutVersion})
	if err != nil {
		return err
	}
	err = s.updateOnce(func(txn *badger.Txn) error {
		if err := txn.Set([]byte(keyMeta), val); err != nil {
			return err
		}
		return txn.Delete([]byte(keyDerive))
	})
	if err != nil {
		return err
	}
	return s.db.Sync()
}

// rederive rebuilds the derived keys of the given tasks from their
// records (after an import wrote records of them in a batch).
func (s *Store) rederive(ctx context.Context, ids []string) error {
	s.wmu.RLock() // no snapshot between two of its commits
	defer s.wmu.RUnlock()
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	var kvs []kv
	for _, id := range ids {
		err := s.view(ctx, func(txn *badger.Txn) error {
			var prefixes [][]byte
			if p, ok, err := sumAt(txn, id); err != nil {
				return err
			} else if ok {
				prefixes = append(prefixes, p)
			}
			if ok, err := exists(txn, pendingMarkKey(id)); err != nil {
				return err
			} else if ok {
				prefixes = append(prefixes, pendingPrefix(id))
				if err := wb.Delete(pendingMarkKey(id)); err != nil {
					return err
				}
			}
			for _, p := range prefixes {
				opts := badger.DefaultIteratorOptions
				opts.PrefetchValues = false
				opts.Prefix = p
				it := txn.NewIterator(opts)
				for it.Seek(p); it.ValidForPrefix(p); it.Next() {
					if err := wb.Delete(it.Item().KeyCopy(nil)); err != nil {
						it.Close()
						return err
					}
				}
				it.Close()
			}
			ts, err := summarizeTxn(ctx, txn, id)
			if errors.Is(err, ErrNotFound) {
				kvs = kvs[:0] // records of a task not written (an import that failed part-way)
				return nil
			}
			if err != nil {
				return err
			}
			kvs, err = s.derivedKVs(ts, kvs[:0])
			return err
		})
		if err != nil {
			return fmt.Errorf("task %q: %w", id, err)
		}
		for _, e := range kvs {
			if err := wb.Set(e.k, e.v); err != nil {
				return err
			}
		}
	}
	return wb.Flush()
}
