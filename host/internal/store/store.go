package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Sentinel errors callers test with errors.Is.
var (
	// ErrLocked: another process holds the store directory.
	ErrLocked = errors.New("store is locked")
	// ErrNotFound: no record under the given id.
	ErrNotFound = errors.New("not found")
	// ErrExists: a record that may be written once already exists.
	ErrExists = errors.New("already exists")
	// ErrReadOnly: a write on a store opened read-only.
	ErrReadOnly = errors.New("store is open read-only")
	// ErrNoStore: a read-only open of a directory that holds no store.
	ErrNoStore = errors.New("no store here")
)

// layoutVersion is the key layout described in doc.go. It is kept in
// m/meta so that a layout change can migrate, and an old binary refuses a
// newer layout instead of misreading it (or writing without keeping the
// derived keys). Layout 2 added the derived keys (summary.go); layout 3
// keeps a large task body under keys of its own (body.go), which an older
// sextant would read as a task without input; layout 4 keys the task
// summaries by created time; layout 5 stores a burst of an execution's
// spans as one entry (spanbatch.go), which layout 4 would misread;
// layout 6 leaves out of a span entry the ids derived from its key
// (implicitIDs), which layout 5 would read as empty; layout 7 lets a
// recording link name more recordings (linkValue), which layout 6 would
// leave out; layout 8 lets a task's summary entry hold its executions
// (summary.go), which layout 7 would leave out, and keeps one status
// index, not two; layout 9 lets an execution's record hold its last
// checkpoint and its task's links (execfold.go), which layout 8 would
// leave out. A writer migrates a store of an older layout at Open by
// building its derived keys again (its records read as they are). A
// store of layout 8 is rebuilt too, though its keys are layout 9's:
// layout 8's RecordCall wrote no summary for the tasks and executions it
// made, so lists by status left out the tasks the proxy recorded.
const layoutVersion = 9

// layoutSameDerived is the oldest layout whose derived keys are the
// current layout's: its store needs no rebuild.
const layoutSameDerived = 9

// Config holds the options of Open. The zero Config is the default:
// durable checkpoints, the built-in redaction patterns, the wall clock,
// slog.Default. Config values are immutable; each WithX returns a copy.
type Config struct {
	clock    func() time.Time
	log      *slog.Logger
	red      *Redactor
	readOnly bool
	noSync   bool
}

// NewConfig returns the default Config.
func NewConfig() Config { return Config{} }

// WithClock sets the clock used for created/updated times and new ids.
// Replay and tests pass a fixed clock.
func (c Config) WithClock(now func() time.Time) Config { c.clock = now; return c }

// WithLogger sets the logger; Badger's own messages go to it below debug
// level (LevelBadgerInfo; warnings and errors at their levels).
func (c Config) WithLogger(l *slog.Logger) Config { c.log = l; return c }

// WithRedactor sets the redaction patterns. The built-in patterns are
// part of every Redactor; nil means the built-in patterns only.
func (c Config) WithRedactor(r *Redactor) Config { c.red = r; return c }

// WithReadOnly opens the store for reading only: a snapshot of it, taken
// at Open, that a writer may go on writing beside (see doc.go).
func (c Config) WithReadOnly(ro bool) Config { c.readOnly = ro; return c }

// WithSyncCheckpoints chooses whether Checkpoint waits for an fsync
// (the default, true). Without it a checkpoint survives the process being
// killed (the data is in the OS page cache once the commit returns) but
// not a power loss or kernel crash.
func (c Config) WithSyncCheckpoints(sync bool) Config { c.noSync = !sync; return c }

// Store is an open store directory. Its methods are safe for concurrent use.
type Store struct {
	db      *badger.DB
	lock    *dirLock
	dir     string // as the user named it, for messages
	absDir  string
	snap    *snapshot     // a reader's copy of the store
	lost    []lostFile    // tables a reader's snapshot left out (damage.go)
	srv     *snapServer   // a writer's snapshot service
	hs      handlers      // a writer's other requests (serve.go)
	wmu     sync.RWMutex  // held shared by every commit, exclusively while a snapshot is taken
	bmu     sync.RWMutex  // shared by Begins from their look in the journal to the append, held alone by CreateTask
	created atomic.Uint64 // CreateTask commits, for Begin's look in Badger made before bmu
	jr      *journal      // a writer's journal of run steps (journal.go)
	recf    *recFilter    // a writer's filter of recording hashes (recfilter.go)
	applyMu sync.Mutex    // one applier at a time (journal_apply.go)
	clock   func() time.Time
	log     *slog.Logger
	red     *Redactor
	ro      bool
	noSync  bool
	indexed bool // the derived keys (summary.go) are complete: use them
	ids     idGen
	syncer  syncer
	seqs    seqCounters
	marks   markWatch  // tasks that may have staged usage (marks.go)
	rewards sync.Mutex // serialises reward sequence numbers
	closeMu sync.Mutex
	closed  bool
	stopGC  chan struct{}
	gcDone  chan struct{}

	stopApply chan struct{}
	applyDone chan struct{}
	// recovered: a reader applied a killed writer's journal (see
	// tryOpenSnapshot) once, or tried to.
	recovered bool

	// lease is a writer's own lease, or a reader's writer's (lease.go);
	// fromWriter: the reader's snapshot was made by a live writer.
	lease      *Lease
	fromWriter bool
}

// Open opens (creating if needed, unless read-only) the store in dir.
//
// Only one process may open a directory for writing. If another holds
// it, Open returns a *LockedError, which names the holder's pid and
// command and matches ErrLocked. A read-only Open reads a snapshot and
// works beside a writer.
func Open(ctx context.Context, dir string, cfg Config) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &Store{
		dir:    filepath.Clean(dir),
		clock:  cfg.clock,
		log:    cfg.log,
		red:    cfg.red,
		ro:     cfg.readOnly,
		noSync: cfg.noSync,
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("store", s.dir)
	if s.red == nil {
		s.red = DefaultRedactor()
	}
	s.ids.clock = s.clock

	if s.ro {
		if _, err := os.Stat(filepath.Join(dir, badger.ManifestFilename)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("open store %s: %w (run a pipeline first, or pass --store)", s.dir, ErrNoStore)
			}
			return nil, fmt.Errorf("open store %s: %w", s.dir, err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open store %s: %w", s.dir, err)
	}

	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", s.dir, err)
	}
	s.absDir = abs
	db, err := s.open(ctx, dir)
	if err != nil {
		return nil, err
	}
	s.db = db
	if err := s.checkMeta(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if !s.ro {
		if err := s.openJournal(); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("open store %s: %w", s.dir, err)
		}
		s.startRecFilter()
	}
	if err := s.openLease(s.fromWriter); err != nil {
		_ = s.Close()
		return nil, err
	}
	if !s.ro {
		s.serveSnapshots()
		s.lock.openDone()
		s.stopGC, s.gcDone = make(chan struct{}), make(chan struct{})
		go s.gcLoop(gcInterval)
		if !testNoApplyLoop {
			s.stopApply, s.applyDone = make(chan struct{}), make(chan struct{})
			go s.applyLoop(s.stopApply, s.applyDone)
		}
	}
	return s, nil
}

// gcInterval is how often an open writer reclaims value-log space.
const gcInterval = 5 * time.Minute

// gcLoop rewrites value-log files that are at least half garbage, as
// Badger asks its users to do periodically.
func (s *Store) gcLoop(every time.Duration) {
	defer close(s.gcDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopGC:
			return
		case <-t.C:
		}
		if liveSnapshots(s.absDir) {
			// Garbage collection deletes value logs, which readers'
			// snapshots link; Badger truncates before unlinking.
			s.log.Debug("value log garbage collection deferred: readers hold snapshots")
			continue
		}
		for n := 0; ; n++ {
			s.wmu.RLock() // garbage collection deletes value logs: not while a snapshot links them
			err := s.db.RunValueLogGC(0.5)
			s.wmu.RUnlock()
			if err != nil {
				if !errors.Is(err, badger.ErrNoRewrite) && !errors.Is(err, badger.ErrRejected) {
					s.log.Warn("value log garbage collection", "err", err)
				}
				break
			}
			s.log.Debug("value log garbage collected", "round", n+1)
		}
	}
}

// open opens Badger: the store directory itself for a writer, a
// snapshot of it for a reader.
func (s *Store) open(ctx context.Context, dir string) (*badger.DB, error) {
	if s.ro {
		return s.openSnapshot(ctx, dir)
	}
	lock, err := lockWriter(ctx, dir, s.dir, s.log)
	if err != nil {
		return nil, err
	}
	if err := s.removeEmptyLogs(dir); err != nil {
		lock.release()
		return nil, err
	}
	db, err := openBadger(s.badgerOptions(dir, false))
	if err != nil {
		lock.release()
		return nil, fmt.Errorf("open store %s: %w", s.dir, err)
	}
	s.lock = lock
	return db, nil
}

// openSnapshot opens a snapshot of the store read-only: made by the
// writer if one has the store open, else by this reader while it holds
// the gate, which keeps writers out for that moment only.
func (s *Store) openSnapshot(ctx context.Context, dir string) (*badger.DB, error) {
	for {
		db, retry, err := s.tryOpenSnapshot(ctx, dir)
		if !retry {
			return db, err
		}
	}
}

// tryOpenSnapshot is one attempt of openSnapshot. It asks for a retry
// when the writer that holds the store closed before serving this reader:
// once the writer is gone the reader copies the store itself.
func (s *Store) tryOpenSnapshot(ctx context.Context, dir string) (_ *badger.DB, retry bool, _ error) {
	lock, writer, err := lockReader(ctx, dir, s.dir, s.log)
	if err != nil {
		return nil, false, err
	}
	sn, err := newSnapshot(dir)
	if err != nil {
		lock.release()
		return nil, false, fmt.Errorf("open store %s: snapshot: %w", s.dir, err)
	}
	if writer != nil {
		if err := askSnapshot(ctx, s.absDir, sn.dir); err != nil {
			sn.remove()
			if errors.Is(err, errNotServing) && writerClosing(dir) {
				hook("reader-waits")
				if werr := waitWriterGone(ctx, dir); werr == nil {
					return nil, true, nil
				}
			}
			writer.Reason = err.Error()
			return nil, false, writer
		}
	} else {
		if !s.recovered && hasJournal(dir) {
			// A killed writer left run steps in the journal: apply them
			// as the next writer would, then copy the store.
			sn.remove()
			lock.release()
			s.recovered = true
			s.recoverJournal(ctx, dir)
			return nil, true, nil
		}
		hook("reader")
		err := takeSnapshot(dir, sn.dir)
		lock.release()
		if err != nil {
			sn.remove()
			return nil, false, fmt.Errorf("open store %s: snapshot: %w", s.dir, err)
		}
	}
	lost, err := repairSnapshot(sn.dir)
	if err != nil {
		sn.remove()
		return nil, false, fmt.Errorf("open store %s: snapshot: %w", s.dir, err)
	}
	for _, l := range lost {
		s.log.Warn("damaged store file left out of the snapshot", "file", l.name, "err", l.reason)
	}
	db, err := openBadger(s.badgerOptions(sn.dir, true))
	if err != nil {
		sn.remove()
		return nil, false, fmt.Errorf("open store %s: %w", s.dir, err)
	}
	s.snap = sn
	s.lost = lost
	s.fromWriter = writer != nil
	return db, false, nil
}

// openBadger opens Badger; an error or panic about a damaged file is a
// *DamageError that says how to proceed.
func openBadger(opt badger.Options) (db *badger.DB, err error) {
	defer func() {
		if err != nil && damagedFile(err.Error()) != "" {
			err = &DamageError{File: damagedFile(err.Error()), Err: fmt.Errorf("%w (sextant store check says what is damaged; sextant store salvage --to DIR copies what is readable)", err)}
		}
	}()
	defer recoverDamage(&err)
	return badger.Open(opt)
}

// removeEmptyLogs deletes zero-length .vlog and .mem files, which a
// process killed while creating one leaves behind and which Badger then
// refuses to open ("Open existing file … Create a new file", badger issue
// #2207; the fix, PR #2331, is unreleased). An empty log holds no entries,
// so nothing is lost. Call it only under the exclusive lock.
func (s *Store) removeEmptyLogs(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("open store %s: %w", s.dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".vlog") && !strings.HasSuffix(name, ".mem") {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("open store %s: remove empty %s: %w", s.dir, name, err)
		}
		s.log.Info("removed an empty log file left by an interrupted write", "file", name)
	}
	return nil
}

// badgerOptions are tuned for many small values written in bursts and
// read back by prefix (see BenchmarkStore and RATIONALE in doc.go).
func (s *Store) badgerOptions(dir string, ro bool) badger.Options {
	opt := badger.DefaultOptions(dir).
		WithReadOnly(ro).
		WithLogger(badgerLogger{s.log}).
		WithNumVersionsToKeep(1).
		WithCompression(options.None). // values are small JSON; CPU matters more than disk here
		WithBlockCacheSize(0).         // no compression or encryption: tables are read through mmap
		WithValueThreshold(valueThreshold).
		WithMemTableSize(32 << 20).
		WithNumMemtables(3).
		WithNumLevelZeroTables(4).
		WithNumLevelZeroTablesStall(12).
		WithValueLogFileSize(256 << 20).
		WithNumCompactors(2).
		WithMetricsEnabled(false).
		WithChecksumVerificationMode(options.OnBlockRead).
		WithVerifyValueChecksum(true)
	if testBadgerOptions != nil {
		opt = testBadgerOptions(opt)
	}
	return opt
}

// testNoApplyLoop, when set (by tests only), leaves the journal to be
// applied only when a read or write settles it, or at Close: a test then
// knows what the journal holds.
var testNoApplyLoop bool

// testBadgerOptions, when set (by tests only), adjusts Badger's options:
// small tables and value logs, so that a test store spans many files.
var testBadgerOptions func(badger.Options) badger.Options

// valueThreshold sends every record to the value log and keeps only
// keys, pointers and the empty index values in the LSM tree (Badger's
// WiscKey design): a span is then copied once, into the value log,
// instead of into the write-ahead log, the memtable, an L0 table and
// every compaction after. Measured on 2 shared cores (BenchmarkStore):
// 4.3 µs of CPU per span written against 6.6 µs with values inline, and
// task reads no slower. Overwritten values (a checkpoint every step)
// leave garbage in the value log, which gcLoop reclaims. A durable run's
// other values (recordings, task, execution, checkpoint: 0.1–1.2 KB) stay
// there too: inline they would save Badger 5 allocations each, but cost
// more CPU and bytes per run (BenchmarkRun/durable, threshold 1 KB).
// Layout 9 keeps the threshold and makes entries small instead: a
// recording its execution's record holds leaves r/<hash> a name of that
// record under 64 bytes (execfold.go), which stays in the tree.
const valueThreshold = 64

// storeMeta is the value of m/meta.
type storeMeta struct {
	Layout int `json:"layout"`
}

// checkMeta reads the store's layout. A writer migrates a store of
// layout 1 (no derived keys) and finishes an interrupted rebuild of the
// derived keys (m/derive set); a reader of such a store reads the records
// instead of the derived keys (s.indexed false).
func (s *Store) checkMeta(ctx context.Context) error {
	var m storeMeta
	deriving := false
	err := s.db.View(func(txn *badger.Txn) error {
		if _, err := txn.Get([]byte(keyDerive)); err == nil {
			deriving = true
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		it, err := txn.Get([]byte(keyMeta))
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) error { return decode([]byte(keyMeta), v, &m) })
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		if s.ro {
			return nil // an empty store someone opened but never wrote
		}
		if err := s.setLayout(); err != nil { // a new store: nothing to derive
			return fmt.Errorf("open store %s: %w", s.dir, err)
		}
		s.indexed = true
		return nil
	case err != nil:
		return fmt.Errorf("open store %s: %w", s.dir, err)
	case m.Layout < 1 || m.Layout > layoutVersion:
		return fmt.Errorf("open store %s: key layout %d is not supported by this sextant (it reads layout %d): %w", s.dir, m.Layout, layoutVersion, ErrSchemaVersion)
	case m.Layout == layoutVersion && !deriving:
		s.indexed = true
		return nil
	case m.Layout >= layoutSameDerived && !deriving:
		s.indexed = true
		if s.ro {
			return nil
		}
		if err := s.setLayout(); err != nil {
			return fmt.Errorf("open store %s: %w", s.dir, err)
		}
		return nil
	case s.ro:
		return nil // read the records; the next writer builds the indexes
	}
	s.log.Info("building the store's indexes (once)", "layout", m.Layout)
	if err := s.rebuildDerived(ctx); err != nil {
		return fmt.Errorf("open store %s: build indexes: %w", s.dir, err)
	}
	s.indexed = true
	return nil
}

// Close flushes and closes the store and releases the directory lock.
// Closing twice is harmless.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	// Readers that find the socket gone from here on wait for the lock
	// (tryOpenSnapshot): the mark comes first so that none fails.
	s.lock.closing()
	s.closeHook("close-start")
	s.srv.stop()
	s.closeHook("close-unserved")
	if s.stopGC != nil {
		close(s.stopGC)
		<-s.gcDone
	}
	var err error
	if s.db != nil {
		s.stopRecFilter()
		err = s.closeJournal()
		if cerr := s.db.Close(); err == nil {
			err = cerr
		}
	}
	s.closeHook("close-db-closed")
	s.lock.release()
	s.snap.remove()
	if err != nil {
		return fmt.Errorf("close store %s: %w", s.dir, err)
	}
	return nil
}

// closeHook calls the test hook at a point of a writer's Close.
func (s *Store) closeHook(point string) {
	if !s.ro {
		hook(point)
	}
}

// Dir returns the store directory as it was named to Open.
func (s *Store) Dir() string { return s.dir }

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.ro }

// Redactor returns the redaction patterns the store applies before
// storing; use the same one before matching (see ChatKey).
func (s *Store) Redactor() *Redactor { return s.red }

// Now returns the store's clock reading, in UTC.
func (s *Store) Now() time.Time { return s.clock().UTC() }

// Sync applies the journal (see journal.go) and forces everything
// committed so far to disk.
func (s *Store) Sync() error {
	if s.ro {
		return nil
	}
	if err := s.settle(); err != nil {
		return err
	}
	return s.syncer.sync(s.db)
}

// update runs fn in a read-write transaction, retrying on a conflict
// with a concurrent writer. The journal is applied first: fn reads and
// writes after every write acknowledged before it.
func (s *Store) update(ctx context.Context, fn func(txn *badger.Txn) error) error {
	if s.ro {
		return fmt.Errorf("store %s: %w", s.dir, ErrReadOnly)
	}
	if err := s.settle(); err != nil {
		return err
	}
	return s.updateRaw(ctx, fn)
}

// updateRaw is update without applying the journal first: for a write
// whose keys no journaled record touches.
func (s *Store) updateRaw(ctx context.Context, fn func(txn *badger.Txn) error) error {
	if s.ro {
		return fmt.Errorf("store %s: %w", s.dir, ErrReadOnly)
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := s.updateOnce(fn)
		if errors.Is(err, badger.ErrConflict) && attempt < 10 {
			continue
		}
		return err
	}
}

// updateOnce is one attempt of update; a panic inside Badger becomes a
// *DamageError, as in view.
func (s *Store) updateOnce(fn func(txn *badger.Txn) error) (err error) {
	s.wmu.RLock()
	defer s.wmu.RUnlock()
	s.jr.writeStarts() // it may create a task: Begin's floor no longer holds
	defer s.jr.writeEnds()
	defer recoverDamage(&err)
	return s.db.Update(fn)
}

// view runs fn in a read-only transaction, after applying the journal
// (so that every acknowledged write is in Badger). A panic inside Badger
// (some corrupt tables make it panic) becomes a *DamageError.
func (s *Store) view(ctx context.Context, fn func(txn *badger.Txn) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.settle(); err != nil {
		return err
	}
	return s.viewRaw(ctx, fn)
}

// viewRaw is view without applying the journal: for a read that
// consults the journal's overlay itself (Recording), or whose keys no
// journaled record writes.
func (s *Store) viewRaw(ctx context.Context, fn func(txn *badger.Txn) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer recoverDamage(&err)
	return s.db.View(fn)
}

// get reads and decodes one key; a missing key is ErrNotFound.
func get(txn *badger.Txn, key []byte, v any) error {
	return getWith(txn, key, func(val []byte) error { return decode(key, val, v) })
}

// getWith is get decoding with dec, which may not keep val.
func getWith(txn *badger.Txn, key []byte, dec func(val []byte) error) error {
	it, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return asDamage(key, err)
	}
	var derr error
	if err := it.Value(func(val []byte) error { derr = dec(val); return nil }); err != nil {
		return asDamage(key, err)
	}
	return derr
}

func exists(txn *badger.Txn, key []byte) (bool, error) {
	_, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// badgerLogger sends Badger's log lines to slog. Badger is chatty at
// info level (opening tables, compactions, flushes), which says nothing
// about the user's runs: info and debug go below slog's debug
// (LevelBadgerInfo, --log-level DEBUG-4 shows them), so --log-level debug
// traces sextant, not Badger. Warnings and errors keep their levels.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) logf(level slog.Level, format string, args ...any) {
	if !b.l.Enabled(context.Background(), level) {
		return
	}
	b.l.Log(context.Background(), level, strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "badger")
}

// Errorf logs Badger's errors, except those about a value it could not
// read: the read returns a *DamageError that names the task and file,
// and Badger's lines (raw key bytes, value pointers) go below debug.
func (b badgerLogger) Errorf(f string, a ...any) {
	if strings.HasPrefix(f, "Unable to read") || strings.HasPrefix(f, "Key: ") {
		b.logf(LevelBadgerInfo, f, a...)
		return
	}
	b.logf(slog.LevelError, f, a...)
}

func (b badgerLogger) Warningf(f string, a ...any) { b.logf(slog.LevelWarn, f, a...) }
func (b badgerLogger) Infof(f string, a ...any)    { b.logf(LevelBadgerInfo, f, a...) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.logf(LevelBadgerInfo-4, f, a...) }

// LevelBadgerInfo is the slog level of Badger's info messages: below
// debug, so that only --log-level DEBUG-4 (or lower) shows them.
const LevelBadgerInfo = slog.LevelDebug - 4
