package store

import (
	"os"
	"syscall"
)

// fdatasync writes a file's data (and the metadata needed to read it
// back, such as its length) to disk.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
