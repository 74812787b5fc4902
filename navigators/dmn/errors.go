package dmn

import (
	"errors"
	"fmt"
	"strconv"
)

// Error is a model the engine cannot read or cannot run: a file that is
// not well-formed XML, an element it does not support, a FEEL expression
// that does not parse. It names the file, the line and the element.
type Error struct {
	File    string // the model's file name, as given to Parse
	Line    int    // 1-based; 0 when unknown
	Element string // the element, such as `decision "Approval"` or `rule "r1"`
	Msg     string
}

func (e *Error) Error() string {
	s := e.File
	if s == "" {
		s = "model"
	}
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	if e.Element != "" {
		s += ": " + e.Element
	}
	return s + ": " + e.Msg
}

// Evaluation errors. Evaluate wraps them in an *EvalError that says
// where they happened; test with errors.Is.
var (
	// ErrNoDecision reports a decision (or decision service) the model
	// does not have.
	ErrNoDecision = errors.New("no such decision")
	// ErrHitPolicy reports a decision table whose hit policy is violated
	// by the rules that matched: two UNIQUE rules, ANY rules that
	// disagree.
	ErrHitPolicy = errors.New("hit policy violated")
	// ErrType reports an input that does not conform to its declared type
	// or allowed values.
	ErrType = errors.New("value does not conform to its type")
	// ErrValue reports a decision table input or output outside the
	// values the table lists for it.
	ErrValue = errors.New("value not among the listed values")
	// ErrUnsupported reports a part of the model the engine cannot run
	// (a function in Java or PMML).
	ErrUnsupported = errors.New("unsupported")
)

// EvalError is an evaluation that failed: the element it failed in (its
// file and line) and why.
type EvalError struct {
	File    string
	Line    int
	Element string
	Err     error
}

func (e *EvalError) Error() string {
	s := ""
	if e.File != "" {
		s = e.File
		if e.Line > 0 {
			s += ":" + strconv.Itoa(e.Line)
		}
		s += ": "
	}
	if e.Element != "" {
		s += e.Element + ": "
	}
	return s + e.Err.Error()
}

// Unwrap returns the cause.
func (e *EvalError) Unwrap() error { return e.Err }

// describe names an element for messages: its kind and its name, else its
// id.
func describe(el *elem) string {
	if n := el.attr("name"); n != "" {
		return fmt.Sprintf("%s %q", el.name, n)
	}
	if id := el.attr("id"); id != "" {
		return fmt.Sprintf("%s %s", el.name, id)
	}
	return el.name
}
