package builtins

import (
	"context"
	"io"

	"github.com/sextant-dev/sextant/sdk"
)

// DecideFile is sextant decide: it evaluates decision of the DMN model in
// path on input (ReadDMNInput's argument). A bad input or model, and an evaluation the model itself refuses are
// sdk.ErrInvalid (exit 2).
func DecideFile(ctx context.Context, path, decision, input string, stdin io.Reader) (any, error) {
	inputs, err := ReadDMNInput(input, stdin)
	if err != nil {
		return nil, dmnInvalid{err}
	}
	m, err := ParseDMNFile(path)
	if err != nil {
		return nil, dmnInvalid{err}
	}
	v, err := m.Evaluate(ctx, decision, inputs)
	if err != nil && DMNInvalid(err) {
		return nil, dmnInvalid{err}
	}
	return v, err
}

// dmnInvalid is a DMN mistake of the caller's: sdk.ErrInvalid.
type dmnInvalid struct{ err error }

func (e dmnInvalid) Error() string        { return e.err.Error() }
func (e dmnInvalid) Unwrap() error        { return e.err }
func (e dmnInvalid) Is(target error) bool { return target == sdk.ErrInvalid }
