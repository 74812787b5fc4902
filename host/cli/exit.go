package cli

import (
	"errors"
	"strings"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/sdk"
)

// The exit codes of docs/design.md ("Exit codes"). A verdict's code comes only from
// evolve.ExitCode; these name the same numbers for outcomes that are not
// verdicts (errors, a paused run).
const (
	ExitOK      = evolve.ExitPass   // success, all gates pass
	ExitFailed  = evolve.ExitFail   // a gate failed, a run failed, a regression was found
	ExitInvalid = 2                 // bad usage or invalid input (config, routine, strategy, plugin)
	ExitWaiting = evolve.ExitReview // waiting for a person (review, or a run paused at a human step)
)

// usageError is a command-line mistake: unknown flag, missing argument.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErr(err error) error { return &usageError{err} }

// exitError carries an explicit exit code for outcomes that are not Go
// failures (a gate verdict, a paused run).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Is makes an exit-2 error sdk.ErrInvalid, for the layers below that
// classify errors (a process answering over the store's socket).
func (e *exitError) Is(target error) bool { return e.code == ExitInvalid && target == sdk.ErrInvalid }

// withCode attaches an exit code to err.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// errSilent ends a command with a failure whose message was already printed.
var errSilent = errors.New("failure already reported")

// ExitCode maps the error a command ended with to the process exit code. A
// command that ends with a verdict returns withCode(evolve.ExitCode(ruling))
// (see verdict), so verdicts keep their one mapping.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if isUsage(err) || layer.IsInvalid(err) {
		return ExitInvalid
	}
	return ExitFailed
}

// cobraUsage are the beginnings of cobra's own command-line errors (argument
// counts, unknown commands, required flags), which it returns as plain
// errors.
var cobraUsage = []string{"unknown command", "accepts ", "requires at least", "unknown flag",
	"unknown shorthand flag", "required flag", "invalid argument", "flag needs an argument",
	"if any flags in the group", "bad flag syntax"}

// isUsage reports whether err is a command-line mistake: ours (usageErr) or
// cobra's.
func isUsage(err error) bool {
	var ue *usageError
	var ae *layer.UsageError
	if errors.As(err, &ue) || errors.As(err, &ae) {
		return true
	}
	msg := err.Error()
	for _, p := range cobraUsage {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
