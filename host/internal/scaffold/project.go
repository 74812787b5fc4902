// Package scaffold writes the starting points sextant hands a user: the
// project of `sextant init` and the plugin project of `sextant plugins
// init`. Both are embedded in the binary, so a sextant installed from a
// module proxy writes them with no checkout at hand.
//
// An error caused by what the caller asked for (a file in the way, a path
// that is no sextant checkout) matches sdk.ErrInvalid; any other is a
// failure to read or write.
package scaffold

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// projectFiles is the project sextant init writes: a pipeline that runs
// offline at once, with its routine, strategy, scripted answers, inputs, a
// dataset stub, a CI workflow and the project file.
//
//go:embed all:project
var projectFiles embed.FS

// projectDir is projectFiles' root.
const projectDir = "project"

// invalidError is a refusal caused by the caller's input: it matches
// sdk.ErrInvalid and reads as the error it wraps.
type invalidError struct{ err error }

func (e invalidError) Error() string        { return e.err.Error() }
func (e invalidError) Unwrap() error        { return e.err }
func (e invalidError) Is(target error) bool { return target == sdk.ErrInvalid }

func invalid(format string, args ...any) error {
	return invalidError{fmt.Errorf(format, args...)}
}

// projectList lists the files WriteProject writes, slash-separated and
// relative to its folder, sorted.
func projectList() ([]string, error) {
	var files []string
	err := fs.WalkDir(projectFiles, projectDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, strings.TrimPrefix(p, projectDir+"/"))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	sort.Strings(files)
	return files, nil
}

// WriteProject writes the project into dir, creating it, and returns the
// files it wrote, slash-separated and sorted. When any of them exists it
// writes nothing and names every one that does.
func WriteProject(dir string) ([]string, error) {
	files, err := projectList()
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(dir); err == nil && !info.IsDir() {
		return nil, invalid("init %s: not a directory", dir)
	}
	var exist []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f))); err == nil {
			exist = append(exist, f)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, invalidError{fmt.Errorf("init %s: %w", dir, err)}
		}
	}
	if len(exist) > 0 {
		return nil, invalid("init %s: would overwrite %s; nothing written (init a new or empty directory)", dir, strings.Join(exist, ", "))
	}
	for _, f := range files {
		data, err := projectFiles.ReadFile(path.Join(projectDir, f))
		if err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		if err := createFile(filepath.Join(dir, filepath.FromSlash(f)), data); err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
	}
	return files, nil
}

// createFile writes a new file, creating its folder. O_EXCL: a file that
// appeared since WriteProject looked is not overwritten.
func createFile(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := out.Write(data); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
