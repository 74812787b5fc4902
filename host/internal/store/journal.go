package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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
// a file of zeros sized in advance and mapped into memory, into which
// records are encoded one after another:
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
// Badger holds the lsn of the last record applied (keyJournal), written
// in the transaction that applies it: a record at or below it is never
// applied twice. A writer that opens a store replays the records above
// it before anything else.
const (
	journalDirName  = "journal"
	journalHeader   = 17
	journalSegSize  = 8 << 20 // a segment's size, unless one record needs more
	journalMaxRec   = 1 << 30 // a longer length field is damage
	kindCheckpoint  = 1
	kindRecording   = 2
	journalSegWidth = 6
)

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
	// kindRecording (task above: the task it is linked to, or "")
	hash string
	val  []byte
}

// segment is one journal file and its mapping.
type segment struct {
	n uint64
	f *os.File
	m []byte
}

// journal is the store's open journal (nil on a reader).
type journal struct {
	dir  string
	sync bool // fdatasync before a checkpoint returns (WithSyncCheckpoints)
	mu   sync.Mutex
	cond *sync.Cond
	cur  *segment   // the segment records go into (nil before the first)
	off  int        // where in cur.m the next record goes
	segs []*segment // the segments not yet deleted, in order; cur last
	seg  uint64     // the number of the last segment created or found

	nextLSN  uint64
	appended atomic.Uint64 // lsn of the last record appended
	kick     chan struct{} // wakes the applier (applyLoop)
	recs     []*jrec       // records appended, not yet applied, in lsn order
	bytes    int           // their size in the segments
	synced   uint64        // lsn of the last record synced
	syncing  bool
	err      error // a failed segment or sync: the journal takes no more

	// The overlay: the latest unapplied value of what a run reads back
	// while it runs.
	execs map[seqID]*jrec
	rdngs map[string]*jrec
	tasks map[string]*jrec // tasks Begin created

	pending atomic.Int64 // len(recs), for readers deciding whether to settle
	free    []*jrec
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
	j.kick = make(chan struct{}, 1)
	return j
}

// newRec returns a record to fill, recycled if one is free. j.mu is held.
func (j *journal) newRec() *jrec {
	if n := len(j.free); n > 0 {
		r := j.free[n-1]
		j.free = j.free[:n-1]
		return r
	}
	return new(jrec)
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

// kvsSize bounds what putKVs writes.
func kvsSize(kvs []kv) int {
	n := binary.MaxVarintLen64
	for _, e := range kvs {
		n += 2*binary.MaxVarintLen64 + len(e.k) + len(e.v)
	}
	return n
}

func putKVs(b *[]byte, kvs []kv, out []kv) []kv {
	*b = binary.AppendUvarint(*b, uint64(len(kvs)))
	for _, e := range kvs {
		k := putBytes(b, e.k)
		v := putBytes(b, e.v)
		out = append(out, kv{k, v})
	}
	return out
}

// begin makes room for a record of at most size payload bytes and its
// header; the payload is appended to b, and end frames it. j.mu is held.
func (j *journal) begin(size int) (b []byte, start int, err error) {
	if j.err != nil {
		return nil, 0, j.err
	}
	if j.cur == nil || len(j.cur.m)-j.off < journalHeader+size {
		if err := j.openSegment(journalHeader + size); err != nil {
			j.fail(err)
			return nil, 0, err
		}
	}
	// The mapping is zeros past j.off: the header stays zero (the end
	// of the segment's records) until end fills it in.
	return j.cur.m[:j.off+journalHeader], j.off, nil
}

// end fills in the header of the record b[start:] and returns its lsn.
func (j *journal) end(b []byte, start int, kind byte) uint64 {
	if &b[0] != &j.cur.m[0] {
		panic("journal: a record outgrew its room") // its size is computed wrongly: a bug
	}
	lsn := j.nextLSN
	j.nextLSN++
	h := b[start : start+journalHeader]
	binary.LittleEndian.PutUint64(h[8:], lsn)
	h[16] = kind
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(b[start+8:], castagnoli))
	binary.LittleEndian.PutUint32(h[0:], uint32(len(b)-start-journalHeader))
	j.off = len(b)
	j.appended.Store(lsn)
	return lsn
}

// appendCheckpoint journals a checkpoint record; it returns its lsn. The
// record's fields copy r's into the segment. Once it returns, the record
// is in the page cache and every read sees it.
func (j *journal) appendCheckpoint(r *jrec) (uint64, error) {
	size := 6*binary.MaxVarintLen64 + len(r.task) + len(r.exec) + len(r.cp) + len(r.execVal) + len(r.sumExec) + len(r.status) + 1 +
		kvsSize(r.kvs) + kvsSize(r.rewrites)
	j.mu.Lock()
	defer j.mu.Unlock()
	b, start, err := j.begin(size)
	if err != nil {
		return 0, err
	}
	rec := j.newRec()
	*rec = jrec{kind: kindCheckpoint, task: r.task, exec: r.exec, status: r.status, sum: r.sum, begins: r.begins,
		kvs: rec.kvs[:0], rewrites: rec.rewrites[:0]}
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
	rec.lsn, rec.size = j.end(b, start, kindCheckpoint), len(b)-start
	j.queue(rec)
	return rec.lsn, nil
}

// appendRecording journals a recording record; it returns its lsn.
func (j *journal) appendRecording(hash, task string, val []byte) (uint64, error) {
	size := 3*binary.MaxVarintLen64 + len(hash) + len(task) + len(val)
	j.mu.Lock()
	defer j.mu.Unlock()
	b, start, err := j.begin(size)
	if err != nil {
		return 0, err
	}
	rec := j.newRec()
	*rec = jrec{kind: kindRecording, hash: hash, task: task, kvs: rec.kvs[:0], rewrites: rec.rewrites[:0]}
	putString(&b, hash)
	putString(&b, task)
	rec.val = putBytes(&b, val)
	rec.lsn, rec.size = j.end(b, start, kindRecording), len(b)-start
	j.queue(rec)
	return rec.lsn, nil
}

// queue takes a record just framed: it is in the overlay and waits for
// the applier. j.mu is held.
func (j *journal) queue(rec *jrec) {
	rec.seg = j.cur.n
	j.recs = append(j.recs, rec)
	j.bytes += rec.size
	switch rec.kind {
	case kindCheckpoint:
		if rec.execVal != nil {
			j.execs[seqID{rec.task, rec.exec}] = rec
		}
		if rec.begins {
			j.tasks[rec.task] = rec
		}
	case kindRecording:
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

// openSegment starts the next segment, of room for at least need bytes.
// j.mu is held.
func (j *journal) openSegment(need int) error {
	if err := os.MkdirAll(j.dir, 0o755); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	size := int64(journalSegSize)
	if int64(need) > size {
		page := int64(os.Getpagesize())
		size = (int64(need) + page - 1) / page * page
	}
	n := j.seg + 1
	path := filepath.Join(j.dir, segName(n))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	m, err := mapSegment(f, size, j.sync, j.dir)
	if err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("journal: segment %s: %w", segName(n), err)
	}
	if j.sync && j.cur != nil {
		// Records of the old segment that a later sync (of the new
		// one) is to cover.
		if err := syncSegment(j.cur); err != nil {
			unmapSegment(&segment{f: f, m: m})
			os.Remove(path)
			return fmt.Errorf("sync journal: %w", err)
		}
	}
	j.seg = n
	j.cur, j.off = &segment{n: n, f: f, m: m}, 0
	j.segs = append(j.segs, j.cur)
	return nil
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
func (j *journal) execution(task, exec string) []byte {
	if j == nil || j.pending.Load() == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if r, ok := j.execs[seqID{task, exec}]; ok {
		return slices.Clone(r.execVal) // the segment is unmapped once applied
	}
	return nil
}

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
// a zero length (the end of the records) or at the first record that
// does not check: torn reports that nothing but zeros follows what that
// record claims (a record cut short by a kill or a power loss), else bad
// is where the damage starts.
func readSegment(path string, seg uint64, fn func(r *jrec) error) (bad int64, torn bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false, err
	}
	size := int64(len(b))
	var off int64
	for {
		if size-off < journalHeader || binary.LittleEndian.Uint32(b[off:]) == 0 {
			if allZero(b[off:]) {
				return -1, false, nil
			}
			// A record whose header is not filled in yet (end fills it in last).
			return off, true, nil
		}
		hdr := b[off : off+journalHeader]
		n := int64(binary.LittleEndian.Uint32(hdr))
		if n > journalMaxRec {
			return off, false, nil
		}
		if size-off-journalHeader < n {
			return off, true, nil
		}
		payload := b[off+journalHeader : off+journalHeader+n : off+journalHeader+n]
		crc := crc32.Update(crc32.Checksum(hdr[8:], castagnoli), castagnoli, payload)
		if crc != binary.LittleEndian.Uint32(hdr[4:]) {
			return off, allZero(b[off+journalHeader+n:]), nil
		}
		r := &jrec{lsn: binary.LittleEndian.Uint64(hdr[8:]), kind: hdr[16], seg: seg, size: int(journalHeader + n)}
		if err := decodeRecord(r, payload); err != nil {
			return off, false, nil
		}
		if err := fn(r); err != nil {
			return 0, false, err
		}
		off += journalHeader + n
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
