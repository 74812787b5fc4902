package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
)

// A read-only Open reads a snapshot: a private directory holding hard
// links to the store's immutable files (tables, value logs) and copies of
// the files Badger appends to (write-ahead logs, MANIFEST), opened with
// Badger's read-only mode. The reader holds no lock on the store itself,
// so a writer can open it, and write, while readers read. See RATIONALE.md
// ("Why readers read snapshots").
const (
	snapshotDirName = "snapshots"  // under the store directory
	snapshotOwner   = "owner.lock" // in each snapshot, locked by its reader
	socketName      = "sextant.sock"
)

// testHook, when set (by tests only), is called at fixed points of taking
// a snapshot: "reader" while a reader copies a store with no writer (the
// gate held), "writer" while a writer copies for a reader (its writes
// paused). It lets tests hold either side there. It is atomic: a store's
// background goroutines (the recording filter's scan) pass hook points
// while a test sets the hook for its next round.
var testHook atomic.Pointer[func(point string)]

func hook(point string) {
	if f := testHook.Load(); f != nil {
		(*f)(point)
	}
}

// setTestHook sets the hook; nil removes it (tests only).
func setTestHook(f func(point string)) {
	if f == nil {
		testHook.Store(nil)
		return
	}
	testHook.Store(&f)
}

// snapshot is a reader's copy of the store.
type snapshot struct {
	dir   string
	owner *os.File // flock held while the snapshot is in use
}

// newSnapshot makes an empty snapshot directory under the store (the
// same file system, so hard links work), or under the system's temporary
// directory if the store's is read-only. Snapshots of readers that died
// are removed on the way.
func newSnapshot(storeDir string) (*snapshot, error) {
	root := filepath.Join(storeDir, snapshotDirName)
	if err := os.MkdirAll(root, 0o755); err != nil {
		root = "" // a read-only store: copy to the temporary directory
	} else {
		sweepSnapshots(root)
	}
	// Made under a tmp- name and renamed once locked, so that a sweep
	// never removes a snapshot that is being made.
	tmp, err := os.MkdirTemp(root, "tmp-")
	if err != nil {
		return nil, err
	}
	owner, err := os.OpenFile(filepath.Join(tmp, snapshotOwner), os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil {
		var held bool
		if held, err = lockFile(owner, false); err == nil && held {
			err = errors.New("snapshot owner lock held")
		}
		if err != nil {
			owner.Close()
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	dir := tmp
	if root != "" {
		dir = filepath.Join(root, fmt.Sprintf("%d-%s", os.Getpid(), strings.TrimPrefix(filepath.Base(tmp), "tmp-")))
		if err := os.Rename(tmp, dir); err != nil {
			releaseFile(owner)
			os.RemoveAll(tmp)
			return nil, err
		}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &snapshot{dir: dir, owner: owner}, nil
}

func (sn *snapshot) remove() {
	if sn == nil {
		return
	}
	_ = os.RemoveAll(sn.dir)
	releaseFile(sn.owner)
}

// sweepSnapshots removes snapshots whose reader is gone (its owner lock
// is free), and tmp- directories abandoned for an hour.
func sweepSnapshots(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		path := filepath.Join(root, e.Name())
		if strings.HasPrefix(e.Name(), "tmp-") {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Hour {
				_ = os.RemoveAll(path)
			}
			continue
		}
		f, err := os.OpenFile(filepath.Join(path, snapshotOwner), os.O_RDWR, 0)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				_ = os.RemoveAll(path)
			}
			continue
		}
		if held, err := lockFile(f, false); err == nil && !held {
			_ = os.RemoveAll(path)
		}
		releaseFile(f)
	}
}

// takeSnapshot fills dst with a consistent copy of the Badger directory
// src. The caller guarantees that no commit runs meanwhile (a writer
// pauses its own; a reader holds the gate and the lock file, so no writer
// exists). Badger's memtable flushes and compactions may run, and the
// order below makes them harmless:
//
//  1. write-ahead logs (.mem), copied up to their last complete
//     transaction. A log that a flush deletes meanwhile is skipped: its
//     table is already in the MANIFEST read in step 4.
//  2. value logs, hard-linked: with no commit none grows or rotates, and
//     only value-log garbage collection deletes one, which a writer skips
//     while any snapshot is in use (liveSnapshots).
//  3. the key registry, copied.
//  4. MANIFEST, copied, then every table it names copied (cloned where the
//     file system can). A table that a compaction deleted meanwhile means
//     another round; data a flush moved from a log into a table after
//     step 1 is then in both, at the same version, which reads the same.
//
// Tables are copied, not linked, because Badger truncates a table to
// zero before unlinking it (ristretto's MmapFile.Delete), which would pull
// the pages out from under a reader's memory map (SIGBUS).
func takeSnapshot(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	var mems, vlogs []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".mem":
			mems = append(mems, e.Name())
		case ".vlog":
			vlogs = append(vlogs, e.Name())
		}
	}
	slices.Sort(mems)
	for _, name := range mems {
		if err := copyWAL(filepath.Join(src, name), filepath.Join(dst, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("copy %s: %w", name, err)
		}
	}
	for _, name := range vlogs {
		info, err := os.Stat(filepath.Join(src, name))
		if err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
		if info.Size() <= walHeaderSize { // holds no value; a writer may delete it at open
			continue
		}
		if err := linkOrCopy(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
	}
	if err := copyFile(filepath.Join(src, badger.KeyRegistryFileName), filepath.Join(dst, badger.KeyRegistryFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("copy %s: %w", badger.KeyRegistryFileName, err)
	}
	var lastErr error
	for range 100 {
		if lastErr = copyTables(src, dst); lastErr == nil {
			return nil
		}
		var de *DamageError
		if errors.As(lastErr, &de) {
			return lastErr
		}
	}
	return fmt.Errorf("the store kept changing while being copied: %w", lastErr)
}

// sameFile reports whether the file at path still has the content b.
func sameFile(path string, b []byte) bool {
	now, err := os.ReadFile(path)
	return err == nil && bytes.Equal(now, b)
}

// copyTables copies MANIFEST and the tables it names; a table deleted
// meanwhile (compacted away) is an error, to be retried.
//
// A MANIFEST that does not replay, or that names a table that is
// missing, while the MANIFEST itself stays the same, is damage, not
// change: the copy then holds every table present, and the reader cuts
// the damage out of it (repairSnapshot).
func copyTables(src, dst string) error {
	manifest := filepath.Join(dst, badger.ManifestFilename)
	srcManifest := filepath.Join(src, badger.ManifestFilename)
	before, err := os.ReadFile(srcManifest)
	if err != nil {
		return fmt.Errorf("copy %s: %w", badger.ManifestFilename, err)
	}
	if err := os.WriteFile(manifest, before, 0o644); err != nil {
		return fmt.Errorf("copy %s: %w", badger.ManifestFilename, err)
	}
	m, err := readManifest(dst)
	if err != nil {
		if !sameFile(srcManifest, before) {
			return fmt.Errorf("read %s: %w", badger.ManifestFilename, err) // rewritten meanwhile: again
		}
		return copyAllTables(src, dst)
	}
	for id := range m {
		name := table.IDToFilename(id)
		err := copyStable(filepath.Join(src, name), filepath.Join(dst, name))
		if errors.Is(err, fs.ErrNotExist) && sameFile(srcManifest, before) {
			continue // damage: the reader's repair notes it
		}
		if err != nil {
			return fmt.Errorf("copy %s: %w", name, err)
		}
	}
	return nil
}

// copyAllTables copies every table in src: what a store whose MANIFEST
// is damaged still holds.
func copyAllTables(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, ok := table.ParseFileID(e.Name()); !ok {
			continue
		}
		if err := copyStable(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return fmt.Errorf("copy %s: %w", e.Name(), err)
		}
	}
	return nil
}

// copyStable copies a table that Badger may delete at any moment: it
// does so by truncating it to zero first, so a copy is whole if the file
// had the same, non-zero size before and after.
func copyStable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	before, err := in.Stat()
	if err != nil {
		return err
	}
	if before.Size() == 0 {
		return errors.New("being deleted")
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if !cloneFile(out, in) {
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	after, err := in.Stat()
	if err != nil {
		return err
	}
	if after.Size() != before.Size() {
		return errors.New("deleted while being copied")
	}
	return nil
}

// liveSnapshots reports whether a reader holds a snapshot of the store
// (its owner lock is taken).
func liveSnapshots(storeDir string) bool {
	root := filepath.Join(storeDir, snapshotDirName)
	entries, err := os.ReadDir(root)
	if err != nil {
		return false
	}
	for _, e := range entries {
		f, err := os.OpenFile(filepath.Join(root, e.Name(), snapshotOwner), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		held, err := lockFile(f, false)
		releaseFile(f)
		if err == nil && held {
			return true
		}
	}
	return false
}

// copyWAL copies a write-ahead log up to its last complete transaction.
// A flush deletes a log, truncating it to zero first; a log that shrinks
// while being copied is left out, its data being in a table by then.
func copyWAL(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	before, err := in.Stat()
	if err != nil {
		return err
	}
	end, err := walEnd(in, before.Size())
	if err != nil || end <= walHeaderSize {
		return err // an empty log holds nothing to read
	}
	if _, err := in.Seek(0, io.SeekStart); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.CopyN(out, in, end)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	after, serr := in.Stat()
	if serr == nil && after.Size() != before.Size() {
		_ = os.Remove(dst) // flushed meanwhile
		return nil
	}
	if err != nil {
		_ = os.Remove(dst)
		return err
	}
	return serr
}

// linkOrCopy hard-links src to dst, or copies it where links fail (a
// snapshot on another file system).
func linkOrCopy(src, dst string) error {
	err := os.Link(src, dst)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return copyFile(src, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// The snapshot service: a writer listens on sextant.sock in the store
// directory; a reader sends one JSON request naming its empty snapshot
// directory and gets one JSON response back once the writer has filled it.
// A request with an Op is one of the writer's own kinds (serve.go).
type snapRequest struct {
	Dir  string          `json:"dir,omitempty"`
	Op   string          `json:"op,omitempty"`
	Body json.RawMessage `json:"body,omitempty"`
}

type snapResponse struct {
	Error string `json:"error,omitempty"`
	// Kind classifies Error for an Op request (see RemoteError).
	Kind string          `json:"kind,omitempty"`
	Body json.RawMessage `json:"body,omitempty"`
}

// snapServer is a writer's snapshot service.
type snapServer struct {
	ln     net.Listener
	wg     sync.WaitGroup
	ctx    context.Context // ends when the service stops
	cancel context.CancelFunc
}

// serveSnapshots starts the snapshot service. Without it (a socket path
// too long for the system, say) readers are refused with an error that
// names this process, so it only logs.
func (s *Store) serveSnapshots() {
	path := filepath.Join(s.absDir, socketName)
	_ = os.Remove(path) // left by a writer that died; we hold the lock
	ln, err := net.Listen("unix", path)
	if err != nil {
		s.log.Warn("cannot serve snapshots to readers; they will have to wait for this process", "err", err)
		return
	}
	srv := &snapServer{ln: ln}
	srv.ctx, srv.cancel = context.WithCancel(context.Background())
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed
			}
			srv.wg.Add(1)
			go func() {
				defer srv.wg.Done()
				s.serveSnapshot(srv.ctx, conn)
			}()
		}
	}()
	s.srv = srv
}

func (srv *snapServer) stop() {
	if srv == nil {
		return
	}
	_ = srv.ln.Close()
	// Requests being served finish first: a delivery cut short would
	// fail the run it continues.
	srv.wg.Wait()
	srv.cancel()
}

func (s *Store) serveSnapshot(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(lockWait))
	var req snapRequest
	if err := json.NewDecoder(io.LimitReader(conn, maxRequest)).Decode(&req); err != nil {
		return
	}
	if req.Op != "" {
		// A request may run steps (a delivery continues a run): the
		// asker's context bounds it, not the snapshot deadline.
		_ = conn.SetDeadline(time.Time{})
		_ = json.NewEncoder(conn).Encode(s.serveOp(ctx, req))
		return
	}
	var resp snapResponse
	if err := s.snapshotTo(req.Dir); err != nil {
		resp.Error = err.Error()
		s.log.Warn("snapshot for a reader failed", "dir", req.Dir, "err", err)
	}
	_ = json.NewEncoder(conn).Encode(resp)
}

// snapshotTo fills a reader's snapshot directory, pausing this store's
// commits meanwhile. It fills only an empty directory made by
// newSnapshot.
func (s *Store) snapshotTo(dst string) error {
	if !filepath.IsAbs(dst) {
		return fmt.Errorf("snapshot directory %q is not absolute", dst)
	}
	info, err := os.Lstat(dst)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("snapshot directory %q is not a directory", dst)
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		return err
	}
	if len(entries) != 1 || entries[0].Name() != snapshotOwner {
		return fmt.Errorf("snapshot directory %q is not a new snapshot", dst)
	}
	// The reader sees every write acknowledged before it asked: the
	// journal's go into Badger first.
	if err := s.settle(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	hook("writer")
	if err := takeSnapshot(s.absDir, dst); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// errNotServing marks a writer's socket that is gone or hung up
// unanswered: a writer that is closing, or one that never served.
var errNotServing = errors.New("not serving")

// notServing wraps the error of a socket that is not served; it reads as
// that error and matches errNotServing.
type notServing struct{ err error }

func (e notServing) Error() string        { return e.err.Error() }
func (e notServing) Unwrap() error        { return e.err }
func (e notServing) Is(target error) bool { return target == errNotServing }

// askSnapshot asks the writer of storeDir to fill dst.
func askSnapshot(ctx context.Context, storeDir, dst string) error {
	ctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", filepath.Join(storeDir, socketName))
	if err != nil {
		return fmt.Errorf("it serves no snapshots (%w)", notServing{err})
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := json.NewEncoder(conn).Encode(snapRequest{Dir: dst}); err != nil {
		return fmt.Errorf("ask it for a snapshot: %w", err)
	}
	var resp snapResponse
	if err := json.NewDecoder(io.LimitReader(conn, 64<<10)).Decode(&resp); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("no snapshot from it: %w", ctx.Err())
		}
		// The writer closed the connection unanswered: it is closing.
		return fmt.Errorf("no snapshot from it: %w", notServing{err})
	}
	if resp.Error != "" {
		return errors.New(resp.Error)
	}
	return nil
}
