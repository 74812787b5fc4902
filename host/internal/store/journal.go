package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The journal holds a run's step writes (checkpoints, an execution's end,
// recordings) until the applier moves them into Badger (see
// "Why run steps commit to a journal, not a Badger transaction each" in
// RATIONALE.md). It is a directory of segments, journal/NNNNNN.log, each
// a sequence of records:
//
//	length uint32 LE   the payload's length
//	crc    uint32 LE   CRC-32C of lsn, kind and payload
//	lsn    uint64 LE   the record's sequence number, from 1, across segments
//	kind   byte        kindCheckpoint or kindRecording
//	payload
//
// Badger holds the lsn of the last record applied (keyJournal), written
// in the transaction that applies it: a record at or below it is never
// applied twice. A writer that opens a store replays the records above
// it before anything else.
const (
	journalDirName  = "journal"
	journalHeader   = 17
	journalSegMax   = 8 << 20 // a segment past this size is closed at the next apply
	journalMaxRec   = 1 << 30 // a longer length field is damage
	kindCheckpoint  = 1
	kindRecording   = 2
	journalChunk    = 256 << 10 // the arena's unit (see journal.arena)
	journalSegWidth = 6
)

// jrec is one journaled write, decoded: its byte slices point into the
// journal's arena (live) or into a replayed segment's bytes.
type jrec struct {
	lsn  uint64
	kind byte
	seg  uint64 // the segment it is in
	// kindCheckpoint
	task, exec string
	cp         []byte // the checkpoint's value
	execVal    []byte // the execution's new value, or nil
	sumExec    []byte // its summary entry (with execVal)
	status     Status // the task's new status, or ""
	kvs        []kv   // span and usage entries to set
	rewrites   []kv   // spans that may sit in an entry already (rewriteSpans)
	sum        []byte // where the task's summary is, if known (live only)
	// kindRecording (task above: the task it is linked to, or "")
	hash string
	val  []byte
}

// journal is the store's open journal (nil on a reader).
type journal struct {
	dir    string
	sync   bool // fdatasync each group (WithSyncCheckpoints)
	mu     sync.Mutex
	cond   *sync.Cond
	f      *os.File // the segment being written
	seg    uint64   // its number
	segLen int64
	rotate bool // open a new segment at the next write
	segs   []uint64

	nextLSN  uint64
	arena    [][]byte // encoded records not yet applied; chunks never grow in place
	lastLSN  []uint64 // of each arena chunk, the lsn of its last record
	wchunk   int      // arena[wchunk][woff:] and the chunks after it are not yet written
	woff     int
	appended atomic.Uint64 // lsn of the last record queued
	kick     chan struct{} // wakes the applier (applyLoop)
	recs     []*jrec       // records appended, not yet applied, in lsn order
	written  int           // recs[:written] are written to the segment (and visible)
	dropped  int           // records applied and dropped from recs, ever
	wrote    uint64        // lsn of the last record written
	synced   uint64        // lsn of the last record synced
	writing  bool
	syncing  bool
	err      error // a failed write or sync: the journal takes no more

	// The overlay: the latest written, unapplied value of what a run
	// reads back while it runs.
	execs map[seqID]*jrec
	rdngs map[string]*jrec

	pending atomic.Int64 // len(recs), for readers deciding whether to settle
	free    []*jrec
	bufs    [][]byte // what the writer writes (unwritten), reused
	spare   [][]byte // arena chunks to reuse
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
	j := &journal{dir: dir, sync: fsync, seg: lastSeg, rotate: true, nextLSN: next,
		execs: map[seqID]*jrec{}, rdngs: map[string]*jrec{}}
	j.cond = sync.NewCond(&j.mu)
	j.kick = make(chan struct{}, 1)
	return j
}

// room returns a slice of the arena with room for n more bytes, whose
// array never moves: records keep pointing into it.
func (j *journal) room(n int) []byte {
	if k := len(j.arena); k > 0 {
		c := j.arena[k-1]
		if cap(c)-len(c) >= n {
			return c
		}
	}
	var c []byte
	if n <= journalChunk && len(j.spare) > 0 {
		c = j.spare[len(j.spare)-1][:0]
		j.spare = j.spare[:len(j.spare)-1]
	} else {
		c = make([]byte, 0, max(n, journalChunk))
	}
	j.arena = append(j.arena, c)
	j.lastLSN = append(j.lastLSN, 0)
	return c
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

// begin reserves room for a record of at most size payload bytes and
// its header; the payload is appended to b, and end frames it.
func (j *journal) begin(size int) (b []byte, start int) {
	b = j.room(journalHeader + size)
	start = len(b)
	return append(b, zeroHeader[:]...), start
}

var zeroHeader [journalHeader]byte

// end fills in the header of the record b[start:] and returns its lsn.
func (j *journal) end(b []byte, start int, kind byte) uint64 {
	if cap(b) != cap(j.arena[len(j.arena)-1]) {
		panic("journal: a record outgrew its room") // its size is computed wrongly: a bug
	}
	lsn := j.nextLSN
	j.nextLSN++
	h := b[start : start+journalHeader]
	binary.LittleEndian.PutUint32(h[0:], uint32(len(b)-start-journalHeader))
	binary.LittleEndian.PutUint64(h[8:], lsn)
	h[16] = kind
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(b[start+8:], castagnoli))
	j.arena[len(j.arena)-1] = b
	j.lastLSN[len(j.lastLSN)-1] = lsn
	j.appended.Store(lsn)
	return lsn
}

// appendCheckpoint queues a checkpoint record; it returns its lsn. The
// record's fields copy r's into the arena.
func (j *journal) appendCheckpoint(r *jrec) (uint64, error) {
	size := 6*binary.MaxVarintLen64 + len(r.task) + len(r.exec) + len(r.cp) + len(r.execVal) + len(r.sumExec) + len(r.status) + 1 +
		kvsSize(r.kvs) + kvsSize(r.rewrites)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return 0, j.err
	}
	rec := j.newRec()
	*rec = jrec{kind: kindCheckpoint, task: r.task, exec: r.exec, status: r.status, sum: r.sum,
		kvs: rec.kvs[:0], rewrites: rec.rewrites[:0]}
	b, start := j.begin(size)
	putString(&b, r.task)
	putString(&b, r.exec)
	flags := byte(0)
	if r.execVal != nil {
		flags |= 1
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
	rec.lsn = j.end(b, start, kindCheckpoint)
	j.queue(rec)
	return rec.lsn, nil
}

// appendRecording queues a recording record; it returns its lsn.
func (j *journal) appendRecording(hash, task string, val []byte) (uint64, error) {
	size := 3*binary.MaxVarintLen64 + len(hash) + len(task) + len(val)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return 0, j.err
	}
	rec := j.newRec()
	*rec = jrec{kind: kindRecording, hash: hash, task: task, kvs: rec.kvs[:0], rewrites: rec.rewrites[:0]}
	b, start := j.begin(size)
	putString(&b, hash)
	putString(&b, task)
	rec.val = putBytes(&b, val)
	rec.lsn = j.end(b, start, kindRecording)
	j.queue(rec)
	return rec.lsn, nil
}

func (j *journal) queue(rec *jrec) {
	j.recs = append(j.recs, rec)
	n := len(j.recs)
	j.pending.Store(int64(n))
	if n == 1 || n >= applyThreshold || len(j.arena) > applyChunks {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
}

// waitWritten writes the queued records, if no other caller is, until
// the record lsn is written (visible) and returns.
func (j *journal) waitWritten(lsn uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.wrote < lsn {
		if j.err != nil {
			return j.err
		}
		if j.writing {
			j.cond.Wait()
			continue
		}
		j.writeLocked()
	}
	return nil
}

// writeLocked writes every queued record with one write per arena chunk
// touched; j.mu is held and released meanwhile.
func (j *journal) writeLocked() {
	j.writing = true
	from, to := j.written, len(j.recs)
	base := j.dropped
	if from == to {
		j.writing = false
		return
	}
	if j.rotate || j.f == nil {
		if err := j.openSegment(); err != nil {
			j.fail(err)
			return
		}
	}
	bufs := j.unwritten()
	f := j.f
	j.mu.Unlock()
	var n int64
	var err error
	for _, b := range bufs {
		var k int
		k, err = f.Write(b)
		n += int64(k)
		if err != nil {
			break
		}
	}
	j.mu.Lock()
	// An apply meanwhile dropped records before from.
	from, to = from-(j.dropped-base), to-(j.dropped-base)
	j.writing = false
	j.segLen += n
	if err != nil {
		j.fail(fmt.Errorf("write journal: %w", err))
		return
	}
	for _, r := range j.recs[from:to] {
		r.seg = j.seg
		switch r.kind {
		case kindCheckpoint:
			if r.execVal != nil {
				j.execs[seqID{r.task, r.exec}] = r
			}
		case kindRecording:
			j.rdngs[r.hash] = r
		}
	}
	j.written = to
	j.wrote = j.recs[to-1].lsn
	if j.segLen >= journalSegMax {
		j.rotate = true
	}
	j.cond.Broadcast()
}

// unwritten returns the arena's bytes not yet written and marks them
// written. The arena's chunks are written in order; writtenOff is how
// far into the first chunk the bytes are written.
func (j *journal) unwritten() [][]byte {
	out := j.bufs[:0]
	for i := j.wchunk; i < len(j.arena); i++ {
		c := j.arena[i]
		if i == j.wchunk {
			if len(c) > j.woff {
				out = append(out, c[j.woff:])
			}
		} else if len(c) > 0 {
			out = append(out, c)
		}
	}
	j.wchunk = len(j.arena) - 1
	j.woff = len(j.arena[j.wchunk])
	j.bufs = out
	return out
}

func (j *journal) fail(err error) {
	j.writing = false
	if j.err == nil {
		j.err = err
	}
	j.cond.Broadcast()
}

// openSegment starts the next segment.
func (j *journal) openSegment() error {
	if err := os.MkdirAll(j.dir, 0o755); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	n := j.seg + 1
	f, err := os.OpenFile(filepath.Join(j.dir, segName(n)), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if j.sync {
		// The new name must survive a power loss too.
		if err := syncDir(j.dir); err != nil {
			f.Close()
			return fmt.Errorf("journal: %w", err)
		}
	}
	if j.f != nil {
		// Records of the old segment that a later sync is to cover.
		if j.sync {
			if err := fdatasync(j.f); err != nil {
				f.Close()
				return fmt.Errorf("sync journal: %w", err)
			}
		}
		j.f.Close()
	}
	j.f, j.seg, j.segLen, j.rotate = f, n, 0, false
	j.segs = append(j.segs, n)
	return nil
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
		target, f := j.wrote, j.f
		j.mu.Unlock()
		err := fdatasync(f)
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
		return slices.Clone(r.execVal) // the arena is reused once applied
	}
	return nil
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
		return slices.Clone(r.val) // the arena is reused once applied
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
// in order. It stops at the first record that is incomplete or does not
// check: torn reports that it reached the end of the file (a write cut
// short), else bad is where the damage starts.
func readSegment(path string, seg uint64, fn func(r *jrec) error) (bad int64, torn bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	size := info.Size()
	br := bufio.NewReaderSize(f, 256<<10)
	var off int64
	var hdr [journalHeader]byte
	for {
		if off == size {
			return -1, false, nil
		}
		if size-off < journalHeader {
			return off, true, nil
		}
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return 0, false, err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[0:]))
		if n > journalMaxRec {
			return off, false, nil
		}
		if size-off-journalHeader < n {
			return off, true, nil
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil {
			return 0, false, err
		}
		crc := crc32.Update(crc32.Checksum(hdr[8:], castagnoli), castagnoli, payload)
		if crc != binary.LittleEndian.Uint32(hdr[4:]) {
			return off, off+journalHeader+n == size, nil
		}
		r := &jrec{lsn: binary.LittleEndian.Uint64(hdr[8:]), kind: hdr[16], seg: seg}
		if err := decodeRecord(r, payload); err != nil {
			return off, false, nil
		}
		if err := fn(r); err != nil {
			return 0, false, err
		}
		off += journalHeader + n
	}
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
