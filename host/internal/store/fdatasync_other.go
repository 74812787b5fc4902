//go:build !linux

package store

import "os"

// fdatasync writes a file's data to disk (a full fsync off Linux).
func fdatasync(f *os.File) error { return f.Sync() }

// preallocate sizes f to size bytes, zeroed.
func preallocate(f *os.File, size int64) error { return f.Truncate(size) }
