package store

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fdatasync writes a file's data (and the metadata needed to read it
// back, such as its length) to disk; pages written through a shared
// mapping of the file are the page cache's, which it writes too. The
// descriptor is held while it runs, so a concurrent Close cannot hand
// its number to another file.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

// preallocate gives f size bytes of disk, zeroed, so that writing them
// through a mapping cannot fail for want of space (a failed write to a
// mapping is a SIGBUS, not an error).
func preallocate(f *os.File, size int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS):
			return f.Truncate(size)
		default:
			return err
		}
	}
}
