package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
		if path == "-" {
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
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}

// ToStdout reports whether one of specs writes stdout (PATH "-"), which
// then belongs to that report alone.
func ToStdout(specs []string) bool {
	for _, spec := range specs {
		if _, path, _ := ParseSpec(spec); path == "-" {
			return true
		}
	}
	return false
}

// WriteSpecs writes r once per spec (checked by CheckSpecs), in the spec's
// format, to its path or, for "-", to stdout. The files are written whole
// or not at all: each is rendered into a temporary file beside its path
// and they are renamed into place only once every one was rendered, so a
// failure leaves no report cut short and no report of this run beside the
// previous run's others.
func WriteSpecs(specs []string, stdout io.Writer, r *Report) (err error) {
	type pending struct{ tmp, path string }
	var done []pending
	defer func() {
		for _, p := range done {
			os.Remove(p.tmp)
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
		if path == "-" {
			if err := write(stdout, r); err != nil {
				return err
			}
			continue
		}
		tmp, err := writeTemp(path, func(w io.Writer) error { return write(w, r) })
		if err != nil {
			return fmt.Errorf("report %q: %w", spec, err)
		}
		done = append(done, pending{tmp, path})
	}
	for i, p := range done {
		if err := os.Rename(p.tmp, p.path); err != nil {
			done = done[i:]
			return fmt.Errorf("report %s: %w", p.path, err)
		}
	}
	done = nil
	return nil
}

// writeTemp writes a temporary file beside path with write and returns its
// name.
func writeTemp(path string, write func(io.Writer) error) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", err
	}
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
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
