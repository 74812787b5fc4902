// Package routine checks and walks routine files on their own, outside a
// run: which navigator reads a file, loading it with the decision files its
// business rule tasks call, what routine validate warns about (functions
// that do not exist, names nothing writes) and the NAME=VALUE assignments
// the command line gives variables. It runs no step and writes nothing; the
// run engine (host/internal/run) runs and simulates routines.
package routine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/sdk"
)

// NavigatorError says which navigator reads a routine is not known, or the
// plugin named is no navigator: the caller must name one.
type NavigatorError struct{ msg string }

func (e *NavigatorError) Error() string { return e.msg }

// FileError is a routine or decision file that cannot be read. It is
// sdk.ErrInvalid: the caller named it.
type FileError struct {
	// Flag is the option that named the file ("" for the routine).
	Flag string
	Path string
	Err  error
}

func (e *FileError) Error() string {
	if e.Flag != "" {
		return fmt.Sprintf("%s: %s: %v", e.Flag, e.Path, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// Is makes the error sdk.ErrInvalid.
func (e *FileError) Is(target error) bool { return target == sdk.ErrInvalid }

// Navigator picks the navigator for a routine file: BPMN by extension, DAG
// or chain by the tables a TOML file declares. It fails with a
// *NavigatorError when neither tells.
func Navigator(path string, data []byte) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".bpmn", ".xml":
		return "bpmn", nil
	case ".toml":
		for _, line := range strings.Split(string(data), "\n") {
			t := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(t, "[tasks"):
				return "dag", nil
			case strings.HasPrefix(t, "[[steps"):
				return "chain", nil
			}
		}
	}
	return "", &NavigatorError{fmt.Sprintf("%s: cannot tell which navigator reads this file; pass --navigator", path)}
}

// cause is what went wrong reading a file, without the path the error
// repeats.
func cause(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// Loaded is a routine loaded by its navigator, which stays open until
// Close.
type Loaded struct {
	Navigator sdk.Navigator
	Routine   *sdk.Routine
	handle    *plugin.Handle
}

// Close closes the navigator.
func (l *Loaded) Close(ctx context.Context) { l.handle.Close(context.WithoutCancel(ctx)) }

// Load opens navigator from reg ("" to pick it by [Navigator]) and loads
// the routine at path with the decision files its business rule tasks
// call. A file that cannot be read is a *FileError; a routine the
// navigator refuses is its *sdk.Error with every problem.
func Load(ctx context.Context, reg *plugin.Registry, path, navigator string, decisions []string) (*Loaded, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{Path: path, Err: cause(err)}
	}
	var files []sdk.File
	for _, d := range decisions {
		b, err := readfile.Read(d, readfile.MaxRoutine)
		if err != nil {
			return nil, &FileError{Flag: "--decisions", Path: d, Err: cause(err)}
		}
		files = append(files, sdk.File{Name: d, Data: b})
	}
	if navigator == "" {
		if navigator, err = Navigator(path, data); err != nil {
			return nil, err
		}
	}
	h, err := reg.Open(ctx, navigator, plugin.Grant{})
	if err != nil {
		return nil, err
	}
	nav, ok := h.Plugin.(sdk.Navigator)
	if !ok {
		h.Close(context.WithoutCancel(ctx))
		return nil, &NavigatorError{fmt.Sprintf("--navigator: plugin %q is a %s, not a navigator", navigator, h.Entry.Kind)}
	}
	r, err := nav.Load(ctx, &sdk.LoadRequest{Name: path, Routine: data, Decisions: files})
	if err != nil {
		h.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return &Loaded{Navigator: nav, Routine: r, handle: h}, nil
}
