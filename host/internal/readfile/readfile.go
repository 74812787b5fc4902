// Package readfile reads the files a user names (pipelines, routines,
// strategies, rules, inputs, datasets, plugin manifests) with a size
// limit, and refuses what is not a regular file: /dev/zero never ends, a
// FIFO with no writer never opens, and either would hang a command that
// should have said what is wrong. Errors name the file and the limit.
//
// It reads; it never decides what a file means.
package readfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Limits of the files sextant reads, by kind. A TOML document's own
// limit is tomlpos.MaxSize; callers give Read one byte more so that
// tomlpos.Scan refuses an oversized file with its own message.
const (
	// MaxRoutine bounds a routine file (BPMN, DAG, chain): a thousand
	// times the largest real one.
	MaxRoutine = 16 << 20
	// MaxInput bounds a run's input or truth file: large documents are
	// real inputs, but the whole input is held in memory as values.
	MaxInput = 64 << 20
	// MaxDataset bounds a dataset (JSONL of recorded tasks).
	MaxDataset = 1 << 30
)

// ErrNotRegular marks a path that names a device, a FIFO, a socket or a
// directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge marks a file over its limit.
var ErrTooLarge = errors.New("over the size limit")

// Read returns the content of the regular file at path, or an error
// naming path when it is not a regular file or holds more than limit
// bytes (then at most limit+1 bytes were read). Symbolic links are
// followed. Errors from os.Open and Read are returned wrapped, with path.
func Read(path string, limit int64) ([]byte, error) {
	f, size, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, tooLarge(path, size, limit)
	}
	return ReadAll(path, f, limit)
}

// Open opens the regular file at path for a caller that streams it (a
// JSONL dataset), refusing it as Read would: not a regular file, or more
// than limit bytes. The caller closes it.
func Open(path string, limit int64) (*os.File, error) {
	f, size, err := open(path)
	if err != nil {
		return nil, err
	}
	if size > limit {
		f.Close()
		return nil, tooLarge(path, size, limit)
	}
	return f, nil
}

// Prefix returns at most n bytes of the regular file at path, and no
// error when it holds more: for a caller whose parser refuses an oversized
// document with its own message (tomlpos.Scan, given tomlpos.MaxSize+1
// bytes). A path that is not a regular file is refused as by Read.
func Prefix(path string, n int64) ([]byte, error) {
	f, _, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// open opens the regular file at path and returns its size.
func open(path string) (*os.File, int64, error) {
	// Stat before opening: opening a FIFO blocks until a writer comes.
	info, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if err := regular(path, info); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	// The file may have been replaced between Stat and Open.
	if info, err = f.Stat(); err == nil {
		err = regular(path, info)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, info.Size(), nil
}

// ReadAll reads r to its end, but refuses more than limit bytes; name
// says what r is in the error ("stdin", a file).
func ReadAll(name string, r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(name, -1, limit)
	}
	return b, nil
}

func regular(path string, info fs.FileInfo) error {
	if info.Mode().IsRegular() {
		return nil
	}
	what := "a special file"
	switch m := info.Mode(); {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	}
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, what)}
}

func tooLarge(name string, size, limit int64) error {
	got := "more than that"
	if size >= 0 {
		got = fmt.Sprintf("%d bytes", size)
	}
	return &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w of %s (%s)", ErrTooLarge, Size(limit), got)}
}

// Size prints a limit in the largest binary unit that divides it.
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// SHA256 returns the hex SHA-256 of the file at path, read as a stream
// (no size limit: the plugins and executables it hashes may be large).
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
