package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
)

// Begin stores a new task, its first execution and that execution's first
// checkpoint in one journal record, durable as a checkpoint is (see
// checkpoint) before it returns; every read sees it. A run started
// with Begin is resumable from the moment the task exists: a crash can
// leave no task, or a task with a checkpoint, never a task without one.
// Defaults are filled in as CreateTask, CreateExecution and Checkpoint fill
// them; the execution's and checkpoint's task id is t.ID.
func (s *Store) Begin(ctx context.Context, t *Task, e *Execution, c *Checkpoint) error {
	if s.ro {
		return fmt.Errorf("begin task: store %s: %w", s.dir, ErrReadOnly)
	}
	if t.Created.IsZero() {
		t.Created = s.Now()
	}
	t.Created = t.Created.UTC()
	if t.ID == "" {
		t.ID = s.ids.nextAt(t.Created)
	}
	if t.Status == "" {
		t.Status = StatusRunning
	}
	t.Tags = normTags(t.Tags)
	if err := checkTask(t); err != nil {
		return fmt.Errorf("begin task: %w", err)
	}
	where := func(err error) error { return fmt.Errorf("begin task %q: %w", t.ID, err) }
	e.Task, c.Task = t.ID, t.ID
	if e.Started.IsZero() {
		e.Started = s.Now()
	}
	if e.ID == "" {
		e.ID = s.ids.nextAt(e.Started)
	}
	c.Execution = e.ID
	if e.Status == "" {
		e.Status = StatusRunning
	}
	e.Started, e.Ended = e.Started.UTC(), e.Ended.UTC()
	// The derived trace id, which the execution's counter keeps
	// (seqCounters.fresh): the execution's own when it is that one.
	trace := e.TraceID
	if h := traceIDHex(e.Task, e.ID); trace != string(h[:]) {
		trace = string(h[:])
	}
	if e.TraceID == "" {
		e.TraceID = trace
	}
	if err := checkExecution(e); err != nil {
		return where(err)
	}
	if c.Updated.IsZero() {
		c.Updated = s.Now()
	}
	c.Updated = c.Updated.UTC()
	// The record's values and keys are encoded into one recycled scratch,
	// which goes back once the journal has copied them (as a
	// checkpoint's, see checkpoint).
	sc := checkpointScratches.Get().(*checkpointScratch)
	defer sc.put()
	if sc.buf == nil {
		sc.buf = getSpanBuf()
	}
	tkvs, begun, err := s.encodeBegun(t, sc)
	if err != nil {
		return where(err)
	}
	eval, err := sc.carve(func(b []byte) ([]byte, error) { return s.appendExecutionValue(b, e) })
	if err != nil {
		return where(err)
	}
	state, err := s.red.redactOpaque(c.State)
	if err != nil {
		return where(err)
	}
	cc := *c
	cc.State = state
	cval, err := sc.carve(func(b []byte) ([]byte, error) { return appendCheckpoint(b, &cc) })
	if err != nil {
		return where(err)
	}
	// The task's keys, as CreateTask writes them (setTaskDerived for a
	// new task, but for adoptPending, which the applier does).
	kvs := appendTaskIndexes(tkvs, t, sc)
	// Their keys and values are carved from sc too; p, which the record
	// and the execution's counter keep (jrec.sum), from its room for what
	// outlives it (keepRoom).
	p := appendSumPrefix(sc.keep.room(len(pSum)+8+len(t.ID)+1), t.Created, t.ID)
	sval, err := sc.carve(func(b []byte) ([]byte, error) { return s.appendSumTaskValue(b, t) })
	if err != nil {
		return where(err)
	}
	kvs = append(kvs, kv{sc.carveKey(func(b []byte) []byte { return append(append(b, p...), sumTask) }), sval})
	if indexedStatus(t.Status) {
		kvs = append(kvs,
			kv{sc.carveKey(func(b []byte) []byte { return appendStatusIndexKey(b, t.Status, t.Created, t.ID) }), nil},
			kv{sc.carveKey(func(b []byte) []byte { return appendPipeStatusKey(b, t.Pipeline, t.Status, t.Created, t.ID) }), nil})
	}
	sc.begin = kvs // for the next Begin, emptied
	sumExec := sc.carveKey(func(b []byte) []byte { return appendSumExecValue(b, e) })
	rec := jrec{task: t.ID, exec: e.ID, cp: cval, execVal: eval, sumExec: sumExec, sum: p, kvs: kvs, begins: true, begun: begun, trace: trace}
	if s.jr.pending.Load() >= journalBacklog {
		// Runs outpace the applier: a new one starts once the records
		// pending are in Badger (the applier's errors are its own).
		s.applyBackground()
	}
	// The task commits to the journal, as a checkpoint does (checkpoint).
	lsn, err := s.appendBegin(ctx, &rec)
	if err != nil {
		return where(err)
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

// journalBacklog bounds the journal's records pending, which Begin
// applies first past it: nothing else holds runs back to the applier's
// pace, and the records, their segments and the next apply would grow
// without end. The applier starts at applyThreshold.
var journalBacklog int64 = 4 * applyThreshold

// encodeBegun is encodeTask(t) for Begin, with a copy of t the applier
// may finish the task from (jrec.begun) when reading the record back
// would give that same task: its body inline, nothing redacted, and
// nothing encoding/json changes on the way (plainTask). Otherwise the
// copy is nil and the applier reads the task from Badger.
func (s *Store) encodeBegun(t *Task, sc *checkpointScratch) ([]kv, *Task, error) {
	kvs := sc.begin[:0]
	if cap(kvs) == 0 {
		kvs = make([]kv, 0, 8) // the record, its indexes and summary (Begin)
	}
	if splitBody(t) {
		kvs, err := s.encodeTask(t, kvs)
		return kvs, nil, err
	}
	redacted := false
	val, err := sc.carve(func(b []byte) (_ []byte, err error) {
		b, redacted, err = s.appendTaskValue(b, t)
		return b, err
	})
	if err != nil {
		return nil, nil, err
	}
	key, _ := sc.carve(func(b []byte) ([]byte, error) { return append(appendTaskPrefix(b, t.ID), subTask), nil })
	kvs = append(kvs, kv{key, val})
	if redacted || !plainTask(t) {
		return kvs, nil, nil
	}
	return kvs, cloneTaskIn(t, &sc.keep), nil
}

// plainTask reports whether decoding t's encoding gives t back, up to
// what no writer tells apart (a nil or an empty slice or map, a time's
// location and monotonic reading): no string encoding/json would
// replace (invalid UTF-8), a compact body it does not escape, and none
// of the fields a new task rarely has (waits, incident, cancellation).
func plainTask(t *Task) bool {
	if t.Waits != nil || t.Incident != nil || t.Cancelled != nil ||
		!plainCompact(t.Input) || !plainCompact(t.Truth) {
		return false
	}
	ok := utf8.ValidString(t.ID) && utf8.ValidString(t.Pipeline) && utf8.ValidString(string(t.Status)) &&
		utf8.ValidString(t.Strategy.Name) && utf8.ValidString(t.Strategy.Version) && utf8.ValidString(t.Strategy.Hash) &&
		utf8.ValidString(t.Routine) && utf8.ValidString(t.Start) && (t.Owner == nil || utf8.ValidString(t.Owner.Host))
	for _, tag := range t.Tags {
		ok = ok && utf8.ValidString(tag)
	}
	for k, v := range t.Rules {
		ok = ok && utf8.ValidString(k) && utf8.ValidString(v)
	}
	return ok
}

// cloneTask copies a plainTask: the caller of Begin keeps its task and
// may change it before the applier reads the copy.
func cloneTask(t *Task) *Task { return cloneTaskIn(t, nil) }

// clonedTask is a task cloneTask copied and its lease, one allocation.
type clonedTask struct {
	t Task
	o Lease
}

// cloneTaskIn is cloneTask carving the copy from room (nil: allocated).
func cloneTaskIn(t *Task, room *keepRoom) *Task {
	c := room.task()
	c.t = *t
	if t.Owner != nil {
		c.o = *t.Owner
		c.t.Owner = &c.o
	}
	if t.Input != nil || t.Truth != nil {
		b := append(append(room.room(len(t.Input)+len(t.Truth)), t.Input...), t.Truth...)
		c.t.Input, c.t.Truth = nil, nil
		if t.Input != nil {
			c.t.Input = b[:len(t.Input):len(t.Input)]
		}
		if t.Truth != nil {
			c.t.Truth = b[len(t.Input):]
		}
	}
	c.t.Tags = slices.Clone(t.Tags)
	c.t.Rules = sharedRules(t.Rules)
	return &c.t
}

// keepRoom is where a Begin carves what outlives it (its task's copy,
// its summary's prefix) from blocks, each piece handed out once and
// never written again: it is not recycled with its scratch, only
// refilled. A block goes once the applier dropped all its pieces.
type keepRoom struct {
	tasks []clonedTask
	b     []byte
}

// keepChunk is how many tasks, and keepBytes how many bytes, keepRoom
// makes at once; a piece of more than keepBytes/8 is made alone.
const (
	keepChunk = 32
	keepBytes = 8 << 10
)

// task returns a zero clonedTask of its own.
func (k *keepRoom) task() *clonedTask {
	if k == nil {
		return new(clonedTask)
	}
	if len(k.tasks) == 0 {
		k.tasks = make([]clonedTask, keepChunk)
	}
	c := &k.tasks[0]
	k.tasks = k.tasks[1:]
	return c
}

// room returns an empty slice with room for n bytes of its own.
func (k *keepRoom) room(n int) []byte {
	if k == nil || n > keepBytes/8 {
		return make([]byte, 0, n)
	}
	if cap(k.b)-len(k.b) < n {
		k.b = make([]byte, 0, keepBytes)
	}
	start := len(k.b)
	k.b = k.b[:start+n]
	return k.b[start : start : start+n]
}

// lastRules is the copy of a task's rules sharedRules made last.
var lastRules atomic.Pointer[map[string]string]

// sharedRules is a copy of rules that nothing writes to, so copies may
// share it: a runner gives every task its one map of rules, and a Begin
// that copies the task (cloneTask) takes the last copy made while the
// rules stay the same.
func sharedRules(rules map[string]string) map[string]string {
	if rules == nil {
		return nil
	}
	if p := lastRules.Load(); p != nil && len(*p) == len(rules) && maps.Equal(*p, rules) {
		return *p
	}
	c := maps.Clone(rules)
	lastRules.Store(&c)
	return c
}

// appendTaskIndexes appends the entries setTaskIndexes writes for t, as
// Begin journals them: their keys carved from sc.
func appendTaskIndexes(kvs []kv, t *Task, sc *checkpointScratch) []kv {
	b := *sc.buf
	start := len(b)
	b = appendTimeIndexKey(b, t.Created, t.ID)
	kvs = append(kvs, kv{b[start:len(b):len(b)], nil})
	start = len(b)
	b = appendFieldIndexKey(b, pPipe, t.Pipeline, t.Created, t.ID)
	kvs = append(kvs, kv{b[start:len(b):len(b)], nil})
	for _, tag := range t.Tags {
		start = len(b)
		b = appendFieldIndexKey(b, pTag, tag, t.Created, t.ID)
		kvs = append(kvs, kv{b[start:len(b):len(b)], nil})
	}
	*sc.buf = b
	return kvs
}

// appendBegin journals Begin's record unless its task exists (ErrExists).
// It holds bmu shared (CreateTask takes it alone) until the record is
// published. A task whose keys sort after every task key in the store
// (the journal's floor: a new id) needs no look in Badger; the journal
// looks for it among the pending records in the step that reserves its
// record.
//
// Otherwise Badger is looked in first, with no lock held: a Badger read
// waits for the commit in flight (the applier's, of many runs), and
// nothing should queue behind that wait. Badger is looked in again if a
// task may have reached it since the look by a way other than a pending
// record: the applier dropped applied records (the journal counts the
// drops), or CreateTask committed one.
func (s *Store) appendBegin(ctx context.Context, rec *jrec) (uint64, error) {
	s.bmu.RLock()
	lsn, err := s.appendBeginLocked(rec, false, 0)
	s.bmu.RUnlock()
	if err != errLookAgain {
		return lsn, err
	}
	drops, created := s.jr.dropCount(), s.created.Load()
	if err := s.taskAbsentBadger(ctx, rec.task); err != nil {
		return 0, err
	}
	hook("begin-looked")
	s.bmu.RLock()
	defer s.bmu.RUnlock()
	if s.created.Load() != created {
		drops = s.jr.dropCount()
		if err := s.taskAbsentBadger(ctx, rec.task); err != nil {
			return 0, err
		}
	}
	for {
		lsn, err := s.appendBeginLocked(rec, true, drops)
		if err != errLookAgain {
			return lsn, err
		}
		drops = s.jr.dropCount()
		if err := s.taskAbsentBadger(ctx, rec.task); err != nil {
			return 0, err
		}
	}
}

// appendBeginLocked is one try of the journal's appendBegin; bmu is held.
func (s *Store) appendBeginLocked(rec *jrec, look bool, drops uint64) (uint64, error) {
	failpoint.Hit(failpoint.CheckpointCommit)
	hook(failpoint.CheckpointCommit)
	lsn, err := s.jr.appendBegin(rec, look, drops)
	if err == nil {
		s.seqs.fresh(rec.task, rec.exec, rec.sum, rec.trace)
	}
	return lsn, err
}

// taskAbsentBadger is nil if no task id is in Badger, else ErrExists.
// It gives the journal the last task key it saw (setFloor).
func (s *Store) taskAbsentBadger(ctx context.Context, id string) error {
	n, ok := s.jr.writesAt()
	var last []byte
	err := s.viewRaw(ctx, func(txn *badger.Txn) error {
		found, err := exists(txn, taskKey(id))
		if err == nil && found {
			err = ErrExists
		}
		if err != nil {
			return err
		}
		last, err = lastTaskKey(txn)
		return err
	})
	if err == nil {
		s.jr.setFloor(last, n, ok)
	}
	return err
}

// lastTaskKey returns the last key under the tasks' prefix, or nil.
func lastTaskKey(txn *badger.Txn) ([]byte, error) {
	opts := badger.DefaultIteratorOptions
	opts.Reverse, opts.PrefetchValues, opts.Prefix = true, false, []byte(pTask)
	it := txn.NewIterator(opts)
	defer it.Close()
	it.Seek(append([]byte(pTask), 0xff))
	if !it.Valid() {
		return nil, nil
	}
	return it.Item().KeyCopy(nil), nil
}

// kvSetter collects what a setter is told to set.
type kvSetter struct{ kvs *[]kv }

func (c kvSetter) Set(k, v []byte) error {
	*c.kvs = append(*c.kvs, kv{k, v})
	return nil
}
