package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// lockFileName is the file in the store directory that carries the lock
// (an advisory lock on the open file) and the pid of its holder. It sits
// beside Badger's own LOCK file; taking ours first means a second process
// gets an error naming the holder instead of Badger's
// "Cannot acquire directory lock" text.
const lockFileName = "sextant.lock"

// LockedError is the error of an Open that found the store held by
// another process. It matches ErrLocked.
type LockedError struct {
	Dir      string // the store directory as named to Open
	PID      int    // the holder's pid, 0 if unknown
	ReadOnly bool   // the failed Open was read-only
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = "pid " + strconv.Itoa(e.PID)
	}
	msg := fmt.Sprintf("store %s is in use by %s", e.Dir, holder)
	if e.ReadOnly {
		msg += " (a command that reads the store cannot share it with one that writes; wait for that process to finish, or stop it, and run this command again)"
	}
	return msg
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

type dirLock struct{ f *os.File }

// lockDir takes the store lock: exclusive for a writer, shared for a
// reader, never waiting. The holder writes its pid into the file; with
// several readers the file names one of them.
func lockDir(dir, display string, shared bool) (*dirLock, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil && shared {
		f, err = os.Open(path) // a read-only file system or directory
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: lock: %w", display, err)
	}
	held, err := lockFile(f, shared)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open store %s: lock: %w", display, err)
	}
	if held {
		pid := readPID(f)
		f.Close()
		return nil, &LockedError{Dir: display, PID: pid, ReadOnly: shared}
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(pid, 0) // informative only; a read-only file system is fine
	}
	return &dirLock{f: f}, nil
}

func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	line, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unlockFile(l.f)
	_ = l.f.Close()
	l.f = nil
}
