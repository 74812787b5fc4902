// Package clock gives the run engine and the CLI the time and a way to
// sleep until a moment, so that timers and retry delays can be tested with
// a fake clock instead of real sleeps.
//
// A fake clock is armed, for tests only, by the environment variable
// SEXTANT_TEST_CLOCK naming a file that holds an RFC 3339 time: Now reads
// the file, and Sleep advances the time written in it at once instead of
// sleeping. A testscript moves time forward by rewriting the file. No
// production setting reads this variable; never set it outside a test.
package clock

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// Env names the fake clock's file (tests only).
const Env = "SEXTANT_TEST_CLOCK"

// Clock tells the time and sleeps.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// Sleep returns once d has passed, or with ctx's error.
	Sleep(ctx context.Context, d time.Duration) error
}

// Real is the wall clock.
type Real struct{}

var _ Clock = Real{}

// Now implements Clock.
func (Real) Now() time.Time { return time.Now() }

// Sleep implements Clock.
func (Real) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// File is a fake clock kept in a file (see the package comment).
type File struct{ Path string }

var _ Clock = File{}

// Now implements Clock: the time in the file. A file that cannot be read
// stops the process: a test that arms the clock wrongly must not run on
// the wall clock unnoticed.
func (f File) Now() time.Time {
	t, err := f.read()
	if err != nil {
		panic(err)
	}
	return t
}

func (f File) read() (time.Time, error) {
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", Env, err)
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %s: want an RFC 3339 time: %w", Env, f.Path, err)
	}
	return t, nil
}

// Sleep implements Clock: it moves the file's time forward by d.
func (f File) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := f.read()
	if err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	return os.WriteFile(f.Path, []byte(t.Add(d).UTC().Format(time.RFC3339Nano)+"\n"), 0o644)
}

// FromEnv returns the fake clock when SEXTANT_TEST_CLOCK is set (checking
// that its file reads), else the wall clock.
func FromEnv() (Clock, error) {
	p := os.Getenv(Env)
	if p == "" {
		return Real{}, nil
	}
	f := File{Path: p}
	if _, err := f.read(); err != nil {
		return nil, err
	}
	return f, nil
}
