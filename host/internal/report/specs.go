package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/sdk"
)

// CheckSpecs checks --report FORMAT=PATH specs before any work: known
// formats, at most one written to stdout (PATH "-"), and every file one
// that can be written: its folder exists, it is no folder itself, and no
// two specs name it. A destination found bad only after a long replay
// would end the command with the verdict's exit status 1 and lose the
// judgment; it is invalid input (sdk.ErrInvalid), found before it. Nor may
// a report name one of files, the files the command reads or writes (a
// merge's shards, a replay's pipeline): it would overwrite them.
func CheckSpecs(specs []string, files ...string) error {
	var toStdout []string
	byPath := map[string]string{}
	own := map[string]bool{}
	for _, f := range files {
		if f != "" && f != "-" {
			own[destKey(f)] = true
		}
	}
	for _, spec := range specs {
		_, path, err := ParseSpec(spec)
		if err != nil {
			return fmt.Errorf("--report: %w", err)
		}
		if isStdout(path) {
			toStdout = append(toStdout, spec)
			continue
		}
		if err := checkDest(path); err != nil {
			return fmt.Errorf("--report: report %q: %w", spec, err)
		}
		key := destKey(path)
		if own[key] {
			return sdk.Errorf(sdk.CodeInvalid, "--report: report %q: %q is a file this command reads or writes: the report would overwrite it", spec, path)
		}
		if other, ok := byPath[key]; ok {
			return sdk.Errorf(sdk.CodeInvalid, "--report: report %q: %q is also written by %q; give each report its own file", spec, path, other)
		}
		byPath[key] = spec
	}
	if len(toStdout) > 1 {
		return fmt.Errorf("--report: %s all ask for stdout; only one report may go to stdout (-), write the others to files", strings.Join(toStdout, ", "))
	}
	return nil
}

// checkDest checks that a report can be written at path.
func checkDest(path string) error {
	dir := filepath.Dir(path)
	switch st, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return sdk.Errorf(sdk.CodeInvalid, "folder %q does not exist (create it first)", dir)
	case err != nil:
		return sdk.Errorf(sdk.CodeInvalid, "folder %q: %v", dir, err)
	case !st.IsDir():
		return sdk.Errorf(sdk.CodeInvalid, "%q is not a folder", dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return sdk.Errorf(sdk.CodeInvalid, "%q is a folder; name a file in it", path)
	}
	return nil
}

// destKey names a report file the same however the path spells it.
func destKey(path string) string {
	path = readfile.Target(path)
	if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		path = filepath.Join(dir, filepath.Base(path))
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return filepath.Clean(path)
}

// isStdout reports whether a report path means standard output: "-", or
// a name of it that shells and CI scripts write (/dev/stdout), which is
// the same stream and gets the same treatment (the summary moves to
// stderr) rather than a second writer truncating the first's output.
func isStdout(path string) bool {
	switch path {
	case "-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1":
		return true
	}
	return false
}

// ToStdout reports whether one of specs writes stdout (PATH "-"), which
// then belongs to that report alone.
func ToStdout(specs []string) bool {
	for _, spec := range specs {
		if _, path, _ := ParseSpec(spec); isStdout(path) {
			return true
		}
	}
	return false
}

// WriteSpecs writes r once per spec (checked by CheckSpecs), in the spec's
// format, to its path or, for "-", to stdout. The files are written whole
// or not at all: each is rendered into a temporary file beside it, and
// they are renamed into place only once every one was, so a failure leaves
// no report cut short and no report of this run beside the previous run's
// others. A path that is a symlink is written through; one that is no
// regular file (a pipe, /dev/stdout) is written in place at the end, never
// replaced.
func WriteSpecs(specs []string, stdout io.Writer, r *Report) error {
	var pending []*pendingFile
	defer func() {
		for _, p := range pending {
			p.abort()
		}
	}()
	for _, spec := range specs {
		format, path, err := ParseSpec(spec)
		if err != nil {
			return err
		}
		write, err := Lookup(format)
		if err != nil {
			return err
		}
		if isStdout(path) {
			if err := write(stdout, r); err != nil {
				return err
			}
			continue
		}
		p, err := prepareFile(path, func(w io.Writer) error { return write(w, r) })
		if err != nil {
			return fmt.Errorf("report %q: %w", spec, err)
		}
		pending = append(pending, p)
	}
	for len(pending) > 0 {
		if err := pending[0].commit(); err != nil {
			return fmt.Errorf("report %s: %w", pending[0].target, err)
		}
		pending = pending[1:]
	}
	return nil
}

// pendingFile is a report rendered and not yet in place: in a temporary
// file beside target, or, for a target that is no regular file, in data.
type pendingFile struct {
	target, tmp string
	data        []byte
}

// prepareFile renders a report for path with write.
func prepareFile(path string, write func(io.Writer) error) (*pendingFile, error) {
	target := readfile.Target(path)
	if st, err := os.Stat(target); err == nil && (!st.Mode().IsRegular() || devicePath(path) || devicePath(target)) {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			return nil, err
		}
		return &pendingFile{target: target, data: b.Bytes()}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return nil, err
	}
	p := &pendingFile{target: target, tmp: f.Name()}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// CreateTemp's 0600 would make a report unreadable to the CI
		// step that uploads it as another user; os.Create gave 0666
		// before the umask.
		err = os.Chmod(f.Name(), 0o644)
	}
	if err != nil {
		p.abort()
		return nil, err
	}
	return p, nil
}

// devicePath reports whether path names a file of the process or the
// system (/dev/stdout, /proc/self/fd/1, /dev/fd/3), which is written in
// place even when it is a regular file: replacing it would leave the open
// descriptor it stands for writing to a file no longer there.
func devicePath(path string) bool {
	return strings.HasPrefix(path, "/dev/") || strings.HasPrefix(path, "/proc/")
}

// commit puts the report in place.
func (p *pendingFile) commit() error {
	if p.tmp != "" {
		return os.Rename(p.tmp, p.target)
	}
	f, err := os.OpenFile(p.target, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(p.data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// abort removes the temporary file of a report not put in place.
func (p *pendingFile) abort() {
	if p.tmp != "" {
		os.Remove(p.tmp)
	}
}
