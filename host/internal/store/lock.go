package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Lock files in the store directory (see "Locking" in doc.go).
const (
	// lockFileName is held exclusively by the one writer for as long as
	// it has the store open; it holds the writer's pid and command line.
	// It sits beside Badger's own LOCK file; taking ours first means a
	// second writer gets an error naming the holder instead of Badger's
	// "Cannot acquire directory lock" text.
	lockFileName = "sextant.lock"
	// gateFileName is held briefly: exclusively by a writer while it
	// opens the store, shared by a reader while it copies a snapshot out
	// of a store no writer has open. It lets a writer tell a reader that
	// is about to finish (wait) from a writer that holds the store (fail).
	gateFileName = "sextant.gate"
)

// LockedError is the error of an Open that found the store held by
// another process: a second writer, or a reader that the writer could
// not serve a snapshot to. It matches ErrLocked.
type LockedError struct {
	Dir      string // the store directory as named to Open
	PID      int    // the holder's pid, 0 if unknown
	Command  string // the holder's command line, "" if unknown
	ReadOnly bool   // the failed Open was read-only
	Reason   string // why a reader could not read beside the holder, if it was one
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = "pid " + strconv.Itoa(e.PID)
	}
	if e.Command != "" {
		holder += " (" + e.Command + ")"
	}
	msg := fmt.Sprintf("store %s is in use by %s", e.Dir, holder)
	if e.Reason != "" {
		msg += ", which could not share a snapshot for reading: " + e.Reason
	}
	return msg + "; wait for it to finish, or stop it, and run this command again"
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// lockWait bounds how long an Open waits for another process's brief
// hold of the gate (a reader copying a snapshot, a writer opening).
const lockWait = time.Minute

// dirLock is a writer's hold on the store: the lock file for its
// lifetime, the gate until the store is open and serving snapshots.
type dirLock struct {
	f    *os.File
	gate *os.File
}

// lockWriter takes the gate (waiting for readers that are copying a
// snapshot) and then the lock file, never waiting for another writer.
// The gate stays held until openDone.
func lockWriter(ctx context.Context, dir, display string, log *slog.Logger) (*dirLock, error) {
	gate, err := openLockFile(dir, gateFileName, false)
	if err != nil {
		return nil, fmt.Errorf("open store %s: lock: %w", display, err)
	}
	if err := waitLock(ctx, gate, false, func() {
		log.Info("waiting for a reader to finish copying a snapshot")
	}); err != nil {
		gate.Close()
		return nil, fmt.Errorf("open store %s: lock: %w", display, err)
	}
	f, err := openLockFile(dir, lockFileName, false)
	if err != nil {
		releaseFile(gate)
		return nil, fmt.Errorf("open store %s: lock: %w", display, err)
	}
	held, err := lockFile(f, false)
	if err != nil || held {
		pid, cmd := readHolder(f)
		f.Close()
		releaseFile(gate)
		if err != nil {
			return nil, fmt.Errorf("open store %s: lock: %w", display, err)
		}
		return nil, &LockedError{Dir: display, PID: pid, Command: cmd}
	}
	content := []byte(strconv.Itoa(os.Getpid()) + "\n" + holderCommand() + "\n")
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(content, 0) // informative only
	}
	return &dirLock{f: f, gate: gate}, nil
}

// openDone lets readers in: the writer is open and serving snapshots.
func (l *dirLock) openDone() {
	if l != nil && l.gate != nil {
		releaseFile(l.gate)
		l.gate = nil
	}
}

// closing tells readers, through the lock file, that the writer is
// closing: from now on it serves no snapshots, and a reader that finds
// its socket gone waits for the lock instead of failing.
func (l *dirLock) closing() {
	if l == nil || l.f == nil {
		return
	}
	if info, err := l.f.Stat(); err == nil {
		_, _ = l.f.WriteAt([]byte(closingMark+"\n"), info.Size())
	}
}

// closingMark is the lock file's last line while its writer closes.
const closingMark = "closing"

func (l *dirLock) release() {
	if l == nil {
		return
	}
	l.openDone()
	if l.f != nil {
		_ = l.f.Truncate(0) // the next holder writes its own; a stale pid misleads
		releaseFile(l.f)
		l.f = nil
	}
}

// readerLock is a reader's brief hold while it copies a snapshot out of
// a store that no writer has open.
type readerLock struct{ gate, f *os.File }

func (l *readerLock) release() {
	if l == nil {
		return
	}
	if l.f != nil {
		releaseFile(l.f)
	}
	if l.gate != nil {
		releaseFile(l.gate)
	}
}

// lockReader waits for the gate (shared) and then tries the lock file
// (shared). With no writer it returns the held locks: no writer can open
// the store until they are released. With a live writer it returns nil
// and the writer's pid and command.
func lockReader(ctx context.Context, dir, display string, log *slog.Logger) (*readerLock, *LockedError, error) {
	gate, err := openLockFile(dir, gateFileName, true)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("open store %s: lock: %w", display, err)
	}
	l := &readerLock{}
	if gate != nil { // absent on a read-only copy of a store: no writer can come
		if err := waitLock(ctx, gate, true, func() {
			log.Info("waiting for a writer to finish opening the store")
		}); err != nil {
			gate.Close()
			return nil, nil, fmt.Errorf("open store %s: lock: %w", display, err)
		}
		l.gate = gate
	}
	f, err := openLockFile(dir, lockFileName, true)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil, nil
	}
	if err != nil {
		l.release()
		return nil, nil, fmt.Errorf("open store %s: lock: %w", display, err)
	}
	held, err := lockFile(f, true)
	if err != nil {
		f.Close()
		l.release()
		return nil, nil, fmt.Errorf("open store %s: lock: %w", display, err)
	}
	if held {
		// A live writer; the gate guarantees it has written its name.
		pid, cmd := readHolder(f)
		f.Close()
		l.release()
		return nil, &LockedError{Dir: display, PID: pid, Command: cmd, ReadOnly: true}, nil
	}
	l.f = f
	return l, nil, nil
}

// openLockFile opens (creating, unless shared on a read-only file
// system) one of the lock files.
func openLockFile(dir, name string, shared bool) (*os.File, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil && shared {
		f, err = os.Open(path) // a read-only file system or directory
	}
	return f, err
}

// waitLock takes a lock, polling while another process holds it
// briefly; onWait is called once, when it first has to wait.
func waitLock(ctx context.Context, f *os.File, shared bool, onWait func()) error {
	deadline := time.Now().Add(lockWait)
	pause := time.Millisecond
	for first := true; ; first = false {
		held, err := lockFile(f, shared)
		if err != nil {
			return err
		}
		if !held {
			return nil
		}
		if first {
			onWait()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still held by another process after %s", filepath.Base(f.Name()), lockWait)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

func releaseFile(f *os.File) {
	_ = unlockFile(f)
	_ = f.Close()
}

func readHolder(f *os.File) (pid int, command string) {
	pid, command, _ = readHolderState(f)
	return pid, command
}

// readHolderState reads the lock file: the writer's pid and command, and
// whether it is closing.
func readHolderState(f *os.File) (pid int, command string, closing bool) {
	buf := make([]byte, 1024)
	n, _ := f.ReadAt(buf, 0)
	first, rest, _ := bytes.Cut(buf[:n], []byte("\n"))
	pid, err := strconv.Atoi(string(bytes.TrimSpace(first)))
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	cmd, rest, _ := bytes.Cut(rest, []byte("\n"))
	mark, _, _ := bytes.Cut(rest, []byte("\n"))
	return pid, string(bytes.TrimSpace(cmd)), string(mark) == closingMark
}

// writerClosing reports whether the writer holding the store in dir has
// begun to close (see dirLock.closing).
func writerClosing(dir string) bool {
	f, err := os.Open(filepath.Join(dir, lockFileName))
	if err != nil {
		return false
	}
	defer f.Close()
	_, _, closing := readHolderState(f)
	return closing
}

// waitWriterGone waits until no writer holds the store in dir: a reader
// whose writer closed before serving it then copies the store itself.
func waitWriterGone(ctx context.Context, dir string) error {
	f, err := openLockFile(dir, lockFileName, true)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := waitLock(ctx, f, true, func() {}); err != nil {
		return err
	}
	return unlockFile(f)
}

// holderCommand is this process's command line as other processes are
// told it: program base name and arguments, secrets redacted, bounded.
func holderCommand() string {
	if len(os.Args) == 0 {
		return ""
	}
	args := append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	cmd := DefaultRedactor().RedactString(strings.Join(args, " "))
	cmd = strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, cmd)
	if len(cmd) > 200 {
		cmd = cmd[:200] + "…"
	}
	return cmd
}
