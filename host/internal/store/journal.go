package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2/z"
)

// The journal holds a run's step writes (checkpoints, an execution's end,
// recordings) until the applier moves them into Badger (see
// "Why run steps commit to a journal, not a Badger transaction each" in
// RATIONALE.md). It is a directory of segments, journal/NNNNNN.log, each
// a file sized in advance and mapped into memory, which opens with a
// header and then holds records encoded one after another:
//
//	magic  uint32 LE   journalMagic (more than any record's length)
//	crc    uint32 LE   CRC-32C of the rest of the header
//	n      uint64 LE   the segment's number, as in its name
//	base   uint64 LE   the lsn of its first record
//	gen    uint64 LE   how many segments the file was before (0: new)
//
// and each record:
//
//	length uint32 LE   the payload's length, never 0
//	crc    uint32 LE   CRC-32C of lsn, kind and payload
//	lsn    uint64 LE   the record's sequence number, from 1, across segments
//	kind   byte        kindCheckpoint or kindRecording
//	payload
//
// A zero length ends a segment's records; the next record is in the
// next segment. A record is in the page cache, which a killed process
// does not lose, once it is encoded: no write call is made. With
// WithSyncCheckpoints, fdatasync puts it on disk.
//
// A segment whose records are all applied is recycled as a later one:
// renamed, its header rewritten with a new base, its old records left in
// place (its pages stay mapped and its blocks written: the next records
// fault no page in and convert no extent). Each record's lsn must be the next one after
// the base (the CRC covers it), so an old record, valid as it is, below
// the base ends the segment; and the length after each new record is
// zeroed before that record's own is set, so that a kill leaves the end
// of the records where it was.
//
// Badger holds the lsn of the last record applied (keyJournal), written
// in the transaction that applies it: a record at or below it is never
// applied twice. A writer that opens a store replays the records above
// it before anything else.
const (
	journalDirName  = "journal"
	journalHeader   = 17
	journalMaxRec   = 1 << 30 // a longer length field is damage
	kindCheckpoint  = 1
	kindRecording   = 2
	journalSegWidth = 6
	// journalSegHeader is the segment header's size: records start there.
	journalSegHeader = 32
	journalMagic     = 0x314affff // "\xff\xffJ1": never a record's length
	// journalSpares is how many applied segments wait to be recycled.
	journalSpares = 2
)

// journalSegSize is a segment's size, unless one record needs more;
// tests lower it.
var journalSegSize = 8 << 20

// recycleSegments reports whether applied segments are recycled: a
// mapped file cannot be renamed on Windows.
const recycleSegments = runtime.GOOS != "windows"

// jrec is one journaled write, decoded: its byte slices point into the
// mapping of its segment (live) or into a replayed segment's bytes.
type jrec struct {
	lsn  uint64
	kind byte
	seg  uint64 // the segment it is in
	size int    // its length in the segment, header included
	// kindCheckpoint
	task, exec string
	cp         []byte // the checkpoint's value
	execVal    []byte // the execution's new value, or nil
	sumExec    []byte // its summary entry (with execVal)
	status     Status // the task's new status, or ""
	begins     bool   // Begin's record: kvs create the task (adoptPending when applied)
	kvs        []kv   // span and usage entries to set
	rewrites   []kv   // spans that may sit in an entry already (rewriteSpans)
	sum        []byte // where the task's summary is, if known (live only)
	// begun is Begin's task as its record decodes, when Begin could tell
	// (encodeBegun; live only): the applier finishes it in memory.
	begun *Task
	// trace is Begin's execution's derived trace id (TraceIDFor), for
	// its counter (seqCounters.fresh); the journal does not keep it.
	trace string
	// kindRecording (task above: the task it is linked to, or "")
	hash string
	val  []byte
	// slot is the record's room in its segment while it is written
	// (reserve); sealed says it is whole (publish). Both under j.mu.
	slot   []byte
	sealed bool
}

// segment is one journal file and its mapping.
type segment struct {
	n   uint64
	gen uint64 // how many segments the file was before
	f   *os.File
	m   []byte
}

// journal is the store's open journal (nil on a reader).
type journal struct {
	dir  string
	sync bool // fdatasync before a checkpoint returns (WithSyncCheckpoints)
	mu   sync.Mutex
	cond *sync.Cond // on mu: a sync finished
	pub  *sync.Cond // on mu: no record is being written (reserve)
	cur  *segment   // the segment records go into (nil before the first)
	off  int        // where in cur.m the next record goes
	segs []*segment // the segments not yet deleted, in order; cur last
	seg  uint64     // the number of the last segment created or found
	// spares are applied segments, still mapped, to recycle (retire).
	spares []*segment
	filter *recFilter // told of each recording appended (noteRecording)

	nextLSN  uint64
	appended atomic.Uint64 // lsn of the last record published
	kick     chan struct{} // wakes the applier (applyLoop)
	recs     []*jrec       // records published, not yet applied, in lsn order
	inflight []*jrec       // records reserved, not yet published, in lsn order
	waiting  []*waiter     // writers of records sealed, not yet published
	bytes    int           // their size in the segments
	synced   uint64        // lsn of the last record synced
	syncing  bool
	err      error // a failed segment or sync: the journal takes no more

	// The overlay: the latest unapplied value of what a run reads back
	// while it runs.
	execs map[seqID]*jrec
	rdngs map[string]*jrec
	tasks map[string]*jrec // tasks Begin created

	// Begin's floor (taskFloor): every task key in Badger or reserved
	// here is at most taskMax; with floorOK, as of floorAt writes
	// outside the journal (writeStarts), which may create tasks too.
	taskMax        []byte
	floorAt        uint64
	floorOK        bool
	wstarts, wends atomic.Uint64
	pending        atomic.Int64  // len(recs), for readers deciding whether to settle
	drops          atomic.Uint64 // dropApplied calls, counted after the records left
	free           []*jrec
	// fresh holds records never used, and room for their entries
	// (newRec): both made many at once.
	fresh    []jrec
	freshKVs []kv
	// texts holds the copies execution hands out, in blocks a Builder
	// never writes again.
	texts strings.Builder
}

// segName is the file name of segment n.
func segName(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) < journalSegWidth {
		s = strings.Repeat("0", journalSegWidth-len(s)) + s
	}
	return s + ".log"
}

// journalSegments lists the segment numbers in dir, in order.
func journalSegments(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil || n == 0 {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// hasJournal reports whether the store in dir holds journal segments.
func hasJournal(dir string) bool {
	segs, err := journalSegments(filepath.Join(dir, journalDirName))
	return err == nil && len(segs) > 0
}

// newJournal starts a journal after the segments that replay found:
// records number on from next.
func newJournal(dir string, fsync bool, lastSeg, next uint64) *journal {
	j := &journal{dir: dir, sync: fsync, seg: lastSeg, nextLSN: next,
		execs: map[seqID]*jrec{}, rdngs: map[string]*jrec{}, tasks: map[string]*jrec{}}
	j.cond = sync.NewCond(&j.mu)
	j.pub = sync.NewCond(&j.mu)
	j.kick = make(chan struct{}, 1)
	return j
}

// newRec returns a record to fill, recycled if one is free. j.mu is held.
// A new one comes from a block of recChunk, with room for recKVs entries
// (a Begin's, as a rule) carved from another: a run's records are many,
// and they are recycled (dropApplied) with their room, not freed.
func (j *journal) newRec() *jrec {
	if n := len(j.free); n > 0 {
		r := j.free[n-1]
		j.free = j.free[:n-1]
		return r
	}
	if len(j.fresh) == 0 {
		j.fresh, j.freshKVs = make([]jrec, recChunk), make([]kv, recChunk*recKVs)
	}
	r := &j.fresh[0]
	r.kvs = j.freshKVs[:0:recKVs]
	j.fresh, j.freshKVs = j.fresh[1:], j.freshKVs[recKVs:]
	return r
}

// recChunk and recKVs size newRec's blocks.
const (
	recChunk = 64
	recKVs   = 8
)

// uvarintLen is the length of x encoded as a uvarint.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// fieldLen is the length of a uvarint-prefixed field of n bytes.
func fieldLen(n int) int { return uvarintLen(uint64(n)) + n }

// kvsLen is the length of what putKVs writes.
func kvsLen(kvs []kv) int {
	n := uvarintLen(uint64(len(kvs)))
	for _, e := range kvs {
		n += fieldLen(len(e.k)) + fieldLen(len(e.v))
	}
	return n
}

// putBytes appends a uvarint-prefixed field and returns the field.
func putBytes(b *[]byte, v []byte) []byte {
	*b = binary.AppendUvarint(*b, uint64(len(v)))
	start := len(*b)
	*b = append(*b, v...)
	return (*b)[start:len(*b):len(*b)]
}

func putString(b *[]byte, v string) {
	*b = binary.AppendUvarint(*b, uint64(len(v)))
	*b = append(*b, v...)
}

func putKVs(b *[]byte, kvs []kv, out []kv) []kv {
	out = slices.Grow(out, len(kvs)) // one allocation, not one per doubling
	*b = binary.AppendUvarint(*b, uint64(len(kvs)))
	for _, e := range kvs {
		k := putBytes(b, e.k)
		v := putBytes(b, e.v)
		out = append(out, kv{k, v})
	}
	return out
}

// Appending is three steps, so that many writers encode their records at
// once and j.mu covers only the bookkeeping (see "Why journal writers
// encode their records outside the journal's lock, and Begin skips
// Badger for a new id" in RATIONALE.md):
//
//   - reserve, under j.mu, gives a record its lsn and its room, the
//     next bytes of the segment;
//   - the writer encodes the record there and frames it (seal), the
//     length last, with no lock held;
//   - publish, under j.mu, puts the records sealed so far, in lsn order
//     up to the first one still being written, in the overlay and the
//     applier's queue, and the writer waits until its own is published:
//     it returns only once every record before it is whole too, so a
//     kill never leaves a record it acknowledged after a torn one.
//
// A segment's records are all published before the next segment opens
// (reserve waits), so a torn record is always the last one replay reads.

// reserve takes the room for a record of exactly size payload bytes and
// its header, in the current segment or a new one, and gives the record
// its lsn. The record is written by the caller and goes to publish.
// j.mu is held.
func (j *journal) reserve(kind byte, size int) (*jrec, error) {
	for {
		if j.err != nil {
			return nil, j.err
		}
		if j.cur != nil && len(j.cur.m)-j.off >= journalHeader+size {
			break
		}
		if len(j.inflight) > 0 {
			// The records in the segment are to be whole before the
			// next segment opens (and, with fsync, syncs this one).
			hook("journal-segment-wait")
			j.pub.Wait()
			continue
		}
		if err := j.openSegment(journalHeader + size); err != nil {
			j.fail(err)
			return nil, err
		}
	}
	rec := j.newRec()
	*rec = jrec{kind: kind, lsn: j.nextLSN, seg: j.cur.n, size: journalHeader + size,
		slot: j.cur.m[j.off : j.off+journalHeader+size : j.off+journalHeader+size],
		kvs:  rec.kvs[:0], rewrites: rec.rewrites[:0]}
	j.nextLSN++
	j.off += rec.size
	if e := j.off; j.cur.gen > 0 && e+4 <= len(j.cur.m) {
		// A recycled segment holds old bytes here: the next record's
		// length is zero until that record is sealed. (A new segment
		// is zeros past j.off.)
		clear(j.cur.m[e : e+4])
	}
	j.inflight = append(j.inflight, rec)
	return rec, nil
}

// seal frames a record whose payload b was appended to its slot's
// header: lsn, kind and CRC first, the length last, which makes it a
// record for a reader of the segment.
func seal(rec *jrec, b []byte) {
	h := rec.slot[:journalHeader]
	if len(b) != rec.size || &b[0] != &h[0] {
		panic("journal: a record's size is computed wrongly") // a bug
	}
	binary.LittleEndian.PutUint64(h[8:], rec.lsn)
	h[16] = rec.kind
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(rec.slot[8:], castagnoli))
	binary.LittleEndian.PutUint32(h[0:], uint32(rec.size-journalHeader))
}

// publish takes a sealed record: the records sealed, from the first one
// reserved up to the first still being written, go to the overlay and
// the applier's queue, in lsn order. It returns once rec has gone (it
// may be applied and recycled then: the caller keeps its lsn).
func (j *journal) publish(rec *jrec) {
	lsn := rec.lsn
	j.mu.Lock()
	rec.sealed = true
	n := 0
	for n < len(j.inflight) && j.inflight[n].sealed {
		j.queue(j.inflight[n])
		n++
	}
	if n > 0 {
		last := j.inflight[n-1].lsn
		j.appended.Store(last)
		rest := copy(j.inflight, j.inflight[n:])
		clear(j.inflight[rest:])
		j.inflight = j.inflight[:rest]
		j.wake(last)
		if rest == 0 {
			j.pub.Broadcast() // a new segment may open (reserve)
		}
	}
	if j.appended.Load() >= lsn {
		j.mu.Unlock()
		return
	}
	// Woken alone when its record is published, not with every
	// publication: a writer then needs j.mu no more.
	hook("journal-publish-wait")
	w := waiters.Get().(*waiter)
	w.lsn = lsn
	j.waiting = append(j.waiting, w)
	j.mu.Unlock()
	<-w.ch
	waiters.Put(w)
}

// waiter is a writer waiting for its record to be published.
type waiter struct {
	lsn uint64
	ch  chan struct{} // one send when it is
}

var waiters = sync.Pool{New: func() any { return &waiter{ch: make(chan struct{}, 1)} }}

// wake lets go the writers whose records are published up to last.
// j.mu is held.
func (j *journal) wake(last uint64) {
	keep := j.waiting[:0]
	for _, w := range j.waiting {
		if w.lsn <= last {
			w.ch <- struct{}{}
		} else {
			keep = append(keep, w)
		}
	}
	clear(j.waiting[len(keep):])
	j.waiting = keep
}

// appendCheckpoint journals a checkpoint record; it returns its lsn. The
// record's fields copy r's into the segment. Once it returns, the record
// is in the page cache and every read sees it.
func (j *journal) appendCheckpoint(r *jrec) (uint64, error) {
	size := checkpointLen(r)
	j.mu.Lock()
	rec, err := j.reserve(kindCheckpoint, size)
	j.mu.Unlock()
	if err != nil {
		return 0, err
	}
	hook("journal-reserved")
	return j.writeCheckpoint(rec, r), nil
}

// errLookAgain is appendBegin's answer when its task may be in Badger:
// the caller looks there, and tries again.
var errLookAgain = errors.New("journal: look for the task in Badger")

// appendBegin journals a Begin's record (r.begins) unless its task is
// pending (ErrExists) or may be in Badger (errLookAgain): with look
// false, unless its task key is above the floor (taskFloor); with look
// true, if records were dropped since the count drops, taken before the
// caller looked. The look and the reservation are one step under j.mu,
// and the task is pending from the reservation on, so two Begins of one
// task cannot both pass.
func (j *journal) appendBegin(r *jrec, look bool, drops uint64) (uint64, error) {
	size := checkpointLen(r)
	j.mu.Lock()
	if _, ok := j.tasks[r.task]; ok {
		j.mu.Unlock()
		return 0, ErrExists
	}
	if look && j.drops.Load() != drops || !look && !j.aboveFloor(r.task) {
		j.mu.Unlock()
		return 0, errLookAgain
	}
	rec, err := j.reserve(kindCheckpoint, size)
	if err == nil {
		rec.task, rec.begins = r.task, true
		j.tasks[r.task] = rec
	}
	j.mu.Unlock()
	if err != nil {
		return 0, err
	}
	hook("journal-reserved")
	return j.writeCheckpoint(rec, r), nil
}

// Begin must know its task is in no store key, and a look in Badger
// waits for the commit in flight (the applier's, of many runs). The
// floor spares it the look: ids the store makes (NewID) increase, so a
// new task's keys sort after every key of the tasks before it. A look
// in Badger that finds no outside write in progress (writesAt) takes
// the last task key (setFloor); a Begin's task raises it as its record
// leaves the pending ones (dropApplied), applied (until then j.tasks
// holds it); and it holds while no write outside the journal, which may
// create a task another way (CreateTask, an import), has started since.

// writeStarts and writeEnds bracket a Badger write other than the
// applier's, which may create a task.
func (j *journal) writeStarts() {
	if j != nil {
		j.wstarts.Add(1)
	}
}

func (j *journal) writeEnds() {
	if j != nil {
		j.wends.Add(1)
	}
}

// writesAt returns how many outside writes started, and whether they
// have all ended: if so, a Badger read that begins after holds them all.
func (j *journal) writesAt() (uint64, bool) {
	e := j.wends.Load()
	n := j.wstarts.Load()
	return n, n == e
}

// aboveFloor reports whether every key of task sorts after every task
// key in the store. j.mu is held.
func (j *journal) aboveFloor(task string) bool {
	if !j.floorOK || j.wstarts.Load() != j.floorAt || j.wends.Load() != j.floorAt {
		return false
	}
	var buf [64]byte
	p := append(append(append(buf[:0], pTask...), task...), '/') // every key of the task starts so
	return bytes.Compare(p, j.taskMax) > 0
}

// raiseFloor makes taskMax at least the key a+b+c. j.mu is held.
func (j *journal) raiseFloor(a, b, c string) {
	var buf [80]byte
	k := append(append(append(buf[:0], a...), b...), c...)
	if bytes.Compare(k, j.taskMax) > 0 {
		j.taskMax = append(j.taskMax[:0], k...)
	}
}

// setFloor takes the last task key of a Badger read begun when writesAt
// said n, ok.
func (j *journal) setFloor(last []byte, n uint64, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.raiseFloor(string(last), "", "")
	if ok {
		j.floorAt, j.floorOK = n, true
	}
}

// checkpointLen is the length of a checkpoint record's payload.
func checkpointLen(r *jrec) int {
	n := fieldLen(len(r.task)) + fieldLen(len(r.exec)) + 1 + fieldLen(len(r.cp)) + fieldLen(len(r.status)) +
		kvsLen(r.kvs) + kvsLen(r.rewrites)
	if r.execVal != nil {
		n += fieldLen(len(r.execVal)) + fieldLen(len(r.sumExec))
	}
	return n
}

// writeCheckpoint encodes r into the room reserved for rec, with no lock
// held, and publishes it.
func (j *journal) writeCheckpoint(rec *jrec, r *jrec) uint64 {
	rec.task, rec.exec, rec.status, rec.sum, rec.begins, rec.begun = r.task, r.exec, r.status, r.sum, r.begins, r.begun
	b := rec.slot[:journalHeader]
	putString(&b, r.task)
	putString(&b, r.exec)
	flags := byte(0)
	if r.execVal != nil {
		flags |= 1
	}
	if r.begins {
		flags |= 2
	}
	b = append(b, flags)
	rec.cp = putBytes(&b, r.cp)
	if r.execVal != nil {
		rec.execVal = putBytes(&b, r.execVal)
		rec.sumExec = putBytes(&b, r.sumExec)
	}
	putString(&b, string(r.status))
	rec.kvs = putKVs(&b, r.kvs, rec.kvs)
	rec.rewrites = putKVs(&b, r.rewrites, rec.rewrites)
	seal(rec, b)
	lsn := rec.lsn
	j.publish(rec)
	return lsn
}

// appendRecording journals a recording record; it returns its lsn.
func (j *journal) appendRecording(hash, task string, val []byte) (uint64, error) {
	size := fieldLen(len(hash)) + fieldLen(len(task)) + fieldLen(len(val))
	j.mu.Lock()
	rec, err := j.reserve(kindRecording, size)
	j.mu.Unlock()
	if err != nil {
		return 0, err
	}
	hook("journal-reserved")
	rec.hash, rec.task = hash, task
	b := rec.slot[:journalHeader]
	putString(&b, hash)
	putString(&b, task)
	rec.val = putBytes(&b, val)
	seal(rec, b)
	lsn := rec.lsn
	j.publish(rec)
	return lsn, nil
}

// queue takes a record just published: it is in the overlay and waits
// for the applier. j.mu is held.
func (j *journal) queue(rec *jrec) {
	rec.slot = nil
	j.recs = append(j.recs, rec)
	j.bytes += rec.size
	switch rec.kind {
	case kindCheckpoint:
		if rec.execVal != nil {
			j.execs[seqID{rec.task, rec.exec}] = rec
		}
	case kindRecording:
		// Noted under j.mu as it enters the overlay: a filter rebuild
		// that reads the overlay then sees this record, or is
		// collecting notes already.
		j.filter.note(rec.hash)
		j.rdngs[rec.hash] = rec
	}
	n := len(j.recs)
	j.pending.Store(int64(n))
	if n == 1 || n >= applyThreshold || j.bytes > applyBytes {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
}

func (j *journal) fail(err error) {
	if j.err == nil {
		j.err = err
	}
	j.cond.Broadcast()
}

// openSegment starts the next segment, of room for at least need bytes
// besides its header: a spare recycled, else a new file. j.mu is held.
func (j *journal) openSegment(need int) error {
	if err := os.MkdirAll(j.dir, 0o755); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	n := j.seg + 1
	var sg *segment
	if k := len(j.spares); k > 0 && journalSegHeader+need <= len(j.spares[k-1].m) {
		sg = j.spares[k-1]
		j.spares = j.spares[:k-1]
		if err := j.recycle(sg, n); err != nil {
			// Applied, and cut off: gone, and a new file takes its place.
			unmapSegment(sg)
			os.Remove(filepath.Join(j.dir, segName(sg.n)))
			os.Remove(filepath.Join(j.dir, segName(n)))
			sg = nil
		}
	}
	if sg == nil {
		var err error
		if sg, err = j.createSegment(n, journalSegHeader+need); err != nil {
			return err
		}
	}
	if j.sync && j.cur != nil {
		// Records of the old segment that a later sync (of the new
		// one) is to cover.
		if err := syncSegment(j.cur); err != nil {
			unmapSegment(sg)
			os.Remove(filepath.Join(j.dir, segName(n)))
			return fmt.Errorf("sync journal: %w", err)
		}
	}
	sg.n = n
	putSegHeader(sg.m, n, j.nextLSN, sg.gen)
	j.seg = n
	j.cur, j.off = sg, journalSegHeader
	j.segs = append(j.segs, j.cur)
	return nil
}

// createSegment creates and maps segment n, of at least size bytes.
func (j *journal) createSegment(n uint64, size int) (*segment, error) {
	sz := int64(journalSegSize)
	if int64(size) > sz {
		page := int64(os.Getpagesize())
		sz = (int64(size) + page - 1) / page * page
	}
	path := filepath.Join(j.dir, segName(n))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	m, err := mapSegment(f, sz, j.sync, j.dir)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("journal: segment %s: %w", segName(n), err)
	}
	return &segment{n: n, f: f, m: m}, nil
}

// recycle renames an applied segment as segment n, its records cut off
// first: whatever a kill leaves of the renaming, the file holds no
// record of this journal until openSegment writes its new header. Its
// pages are mapped already, and its blocks written: the next records
// fault no page in and convert no extent.
func (j *journal) recycle(sg *segment, n uint64) error {
	clear(sg.m[journalSegHeader : journalSegHeader+4])
	hook("journal-recycle")
	if err := os.Rename(filepath.Join(j.dir, segName(sg.n)), filepath.Join(j.dir, segName(n))); err != nil {
		return err
	}
	hook("journal-recycled")
	if j.sync {
		// A power loss must not take the name back once records in
		// the segment are acknowledged: its header names n.
		if err := syncDir(j.dir); err != nil {
			return err
		}
	}
	sg.gen++
	return nil
}

// putSegHeader writes a segment's header: its number, the lsn of its
// first record, and how many segments its file was before.
func putSegHeader(m []byte, n, base, gen uint64) {
	h := m[:journalSegHeader]
	binary.LittleEndian.PutUint64(h[8:], n)
	binary.LittleEndian.PutUint64(h[16:], base)
	binary.LittleEndian.PutUint64(h[24:], gen)
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(h[8:], castagnoli))
	binary.LittleEndian.PutUint32(h[0:], journalMagic)
}

// retire takes segments whose records are all applied: up to
// journalSpares of full size stay mapped, to be recycled; the rest are
// deleted.
func (j *journal) retire(segs []*segment) error {
	if recycleSegments {
		j.mu.Lock()
		keep := 0
		for _, sg := range segs {
			if j.err != nil || len(j.spares) >= journalSpares || len(sg.m) != journalSegSize {
				segs[keep] = sg
				keep++
				continue
			}
			j.spares = append(j.spares, sg)
		}
		segs = segs[:keep]
		j.mu.Unlock()
	}
	return j.remove(segs)
}

// dropSpares returns the spares, which the journal no longer holds: for
// Close to delete. j.mu is held.
func (j *journal) dropSpares() []*segment {
	sp := j.spares
	j.spares = nil
	return sp
}

// mapSegment sizes a new segment file, maps it, and with fsync makes its
// name and size durable.
func mapSegment(f *os.File, size int64, fsync bool, dir string) ([]byte, error) {
	if err := preallocate(f, size); err != nil {
		return nil, err
	}
	if fsync {
		// The new name and size must survive a power loss too.
		if err := fdatasync(f); err != nil {
			return nil, err
		}
		if err := syncDir(dir); err != nil {
			return nil, err
		}
	}
	return z.Mmap(f, true, size)
}

// syncSegment puts a segment's mapped records on disk.
func syncSegment(sg *segment) error {
	if runtime.GOOS != "linux" {
		// Elsewhere a file's sync need not cover its shared mappings.
		if err := z.Msync(sg.m); err != nil {
			return err
		}
	}
	return fdatasync(sg.f)
}

// unmapSegment unmaps and closes a segment: nothing may point into its
// mapping any more.
func unmapSegment(sg *segment) error {
	err := z.Munmap(sg.m)
	sg.m = nil
	if cerr := sg.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// waitSynced syncs the segment, if no other caller is, until record lsn
// is on disk.
func (j *journal) waitSynced(lsn uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.synced < lsn {
		if j.err != nil {
			return j.err
		}
		if j.syncing {
			j.cond.Wait()
			continue
		}
		j.syncing = true
		// Segments before cur were synced when cur was opened.
		target, cur := j.appended.Load(), j.cur
		j.mu.Unlock()
		err := syncSegment(cur)
		j.mu.Lock()
		j.syncing = false
		if err != nil {
			j.fail(fmt.Errorf("sync journal: %w", err))
			return j.err
		}
		j.synced = max(j.synced, target)
		j.cond.Broadcast()
	}
	return nil
}

// execution returns the latest unapplied value of an execution, if the
// journal holds one.
func (j *journal) execution(task, exec string) string {
	if j == nil || j.pending.Load() == 0 {
		return ""
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if r, ok := j.execs[seqID{task, exec}]; ok {
		return j.text(r.execVal) // a copy: the segment is unmapped once applied
	}
	return ""
}

// text is a copy of b, carved from a block of texts unless it is long.
// j.mu is held.
func (j *journal) text(b []byte) string {
	if len(b) > textBlock/8 {
		return string(b)
	}
	if j.texts.Cap()-j.texts.Len() < len(b) {
		j.texts.Reset() // what was handed out stays in the strings that hold it
		j.texts.Grow(textBlock)
	}
	start := j.texts.Len()
	j.texts.Write(b)
	return j.texts.String()[start:]
}

// textBlock is the size of the blocks journal.text carves from.
const textBlock = 8 << 10

// hasExecution reports whether the journal holds an unapplied value of
// an execution.
func (j *journal) hasExecution(task, exec string) bool {
	if j == nil || j.pending.Load() == 0 {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.execs[seqID{task, exec}]
	return ok
}

// hasTask reports whether the journal holds an unapplied Begin of task.
func (j *journal) hasTask(task string) bool {
	if j == nil || j.pending.Load() == 0 {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.tasks[task]
	return ok
}

// recording returns the latest unapplied value of a recording, if the
// journal holds one.
func (j *journal) recording(hash string) []byte {
	if j == nil || j.pending.Load() == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if r, ok := j.rdngs[hash]; ok {
		return slices.Clone(r.val) // the segment is unmapped once applied
	}
	return nil
}

// syncDir fsyncs a directory, so that names created in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// readSegment decodes the records of one segment, calling fn with each
// in order; their byte slices point into the segment's bytes. It stops at
// a zero length (the end of the records), at an old record of a
// recycled segment (below its base), or at the first record that does
// not check: torn reports that the record was cut short by a kill or a
// power loss (nothing but zeros follows what it claims; in a recycled
// segment, which holds old bytes there, any record that does not
// check), else bad is where the damage starts.
func readSegment(path string, seg uint64, fn func(r *jrec) error) (bad int64, torn bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false, err
	}
	size := int64(len(b))
	var (
		off             int64
		base, next, gen uint64 // next: the lsn the next record must have (0: unchecked, no header)
	)
	if size >= journalSegHeader && binary.LittleEndian.Uint32(b) == journalMagic {
		off = journalSegHeader
		if binary.LittleEndian.Uint32(b[off:]) == 0 {
			// No record yet: the header may be half written (openSegment
			// cuts a recycled segment's records off before it).
			return -1, false, nil
		}
		h := b[:journalSegHeader]
		if crc32.Checksum(h[8:], castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
			return 0, false, nil
		}
		if binary.LittleEndian.Uint64(h[8:]) != seg {
			// A recycled segment renamed, its header not rewritten yet: its
			// records are another segment's, all applied.
			return -1, false, nil
		}
		base, gen = binary.LittleEndian.Uint64(h[16:]), binary.LittleEndian.Uint64(h[24:])
		next = base
	}
	for {
		if size-off < journalHeader || binary.LittleEndian.Uint32(b[off:]) == 0 {
			if gen > 0 || allZero(b[off:]) {
				return -1, false, nil
			}
			// A record whose header is not filled in yet (end fills it in last).
			return off, true, nil
		}
		hdr := b[off : off+journalHeader]
		n := int64(binary.LittleEndian.Uint32(hdr))
		if n > journalMaxRec {
			return off, gen > 0, nil
		}
		if size-off-journalHeader < n {
			return off, true, nil
		}
		payload := b[off+journalHeader : off+journalHeader+n : off+journalHeader+n]
		crc := crc32.Update(crc32.Checksum(hdr[8:], castagnoli), castagnoli, payload)
		if crc != binary.LittleEndian.Uint32(hdr[4:]) {
			return off, gen > 0 || allZero(b[off+journalHeader+n:]), nil
		}
		r := &jrec{lsn: binary.LittleEndian.Uint64(hdr[8:]), kind: hdr[16], seg: seg, size: int(journalHeader + n)}
		if next > 0 && r.lsn != next {
			if gen > 0 && r.lsn < base {
				return -1, false, nil // a record of the segment the file was before
			}
			return off, false, nil
		}
		if err := decodeRecord(r, payload); err != nil {
			return off, false, nil
		}
		if err := fn(r); err != nil {
			return 0, false, err
		}
		off += journalHeader + n
		if next > 0 {
			next++
		}
	}
}

// allZero reports whether b holds only zeros.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// decodeRecord fills r from its payload.
func decodeRecord(r *jrec, p []byte) error {
	d := decoder{b: p}
	switch r.kind {
	case kindCheckpoint:
		r.task, r.exec = string(d.bytes()), string(d.bytes())
		flags := d.byte()
		r.cp = d.bytes()
		if flags&1 != 0 {
			r.execVal, r.sumExec = d.bytes(), d.bytes()
		}
		r.begins = flags&2 != 0
		r.status = Status(d.bytes())
		r.kvs, r.rewrites = d.kvs(), d.kvs()
	case kindRecording:
		r.hash, r.task, r.val = string(d.bytes()), string(d.bytes()), d.bytes()
	default:
		return fmt.Errorf("unknown record kind %d", r.kind)
	}
	if d.err != nil || len(d.b) != 0 {
		return errors.New("malformed record")
	}
	return nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) bytes() []byte {
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		d.err, d.b = errors.New("bad field"), nil
		return nil
	}
	v := d.b[k : k+int(n) : k+int(n)]
	d.b = d.b[k+int(n):]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.err = errors.New("bad field")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) kvs() []kv {
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)) {
		d.err, d.b = errors.New("bad field"), nil
		return nil
	}
	d.b = d.b[k:]
	out := make([]kv, 0, n)
	for range n {
		key, val := d.bytes(), d.bytes()
		if d.err != nil {
			return nil
		}
		out = append(out, kv{key, val})
	}
	return out
}
