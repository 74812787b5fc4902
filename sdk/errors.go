package sdk

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Code classifies an error so that the host can react to it (retry, fall
// back, report a validation problem) whatever transport carried it.
type Code string

// The error codes of the wire protocol.
const (
	// CodeInvalid: the input (a routine, a request) is invalid; Problems says where.
	CodeInvalid Code = "invalid"
	// CodeRateLimited: the upstream refused for rate; RetryAfter may say when to retry.
	CodeRateLimited Code = "rate_limited"
	// CodeTimeout: the call or an upstream call ran out of time.
	CodeTimeout Code = "timeout"
	// CodeAuth: credentials are missing or refused.
	CodeAuth Code = "auth"
	// CodeBadRequest: the upstream refused the request as malformed; do not retry.
	CodeBadRequest Code = "bad_request"
	// CodeUnavailable: the upstream is down or answered 5xx; retry or fall back.
	CodeUnavailable Code = "unavailable"
	// CodeUnknownMethod: the plugin does not answer this method.
	CodeUnknownMethod Code = "unknown_method"
	// CodeInternal: anything else, including a recovered panic.
	CodeInternal Code = "internal"
	// CodeUnbound: a navigator.bound.* call names a binding, or an Env
	// version, that the plugin instance does not hold (it restarted, or
	// evicted it, or another caller moved it on). The host resends the
	// call in full. See PROTOCOL.md, "Binding".
	CodeUnbound Code = "unbound"
)

// Error is an error that crosses the plugin boundary intact: a plugin
// returns one (or any error, which becomes CodeInternal) and the host
// receives the same value from every transport.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// RetryAfter is set with CodeRateLimited when the upstream said when to retry.
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
	// Problems lists positioned validation problems with CodeInvalid.
	Problems []Problem `json:"problems,omitempty"`
}

// Error implements error. With Problems it prints one problem per line.
func (e *Error) Error() string {
	if len(e.Problems) > 0 {
		lines := make([]string, len(e.Problems))
		for i, p := range e.Problems {
			lines[i] = p.String()
		}
		return strings.Join(lines, "\n")
	}
	if e.Code == CodeRateLimited && e.RetryAfter > 0 {
		return fmt.Sprintf("%s (retry-after %s)", e.Message, e.RetryAfter)
	}
	return e.Message
}

// Is makes errors.Is(err, sdk.ErrRateLimited) and friends match on Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is; they match any *Error with the same Code.
var (
	ErrInvalid       = &Error{Code: CodeInvalid}
	ErrRateLimited   = &Error{Code: CodeRateLimited}
	ErrTimeout       = &Error{Code: CodeTimeout}
	ErrAuth          = &Error{Code: CodeAuth}
	ErrBadRequest    = &Error{Code: CodeBadRequest}
	ErrUnavailable   = &Error{Code: CodeUnavailable}
	ErrUnknownMethod = &Error{Code: CodeUnknownMethod}
	ErrInternal      = &Error{Code: CodeInternal}
	ErrUnbound       = &Error{Code: CodeUnbound}
)

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Problem is one positioned validation problem, as in
// `email-triage.bpmn:42: gateway "confident": no outgoing flow`.
type Problem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Element string `json:"element,omitempty"` // BPMN element id, TOML key path or node id
	Message string `json:"message"`
}

// String renders the problem as FILE:LINE: ELEMENT: MESSAGE, leaving out
// what is unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
	} else if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Element != "" {
		b.WriteString(p.Element)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Invalid returns a CodeInvalid error carrying problems, or nil when there
// are none.
func Invalid(problems ...Problem) error {
	if len(problems) == 0 {
		return nil
	}
	return &Error{Code: CodeInvalid, Message: problems[0].String(), Problems: problems}
}

// AsError converts any error into an *Error, keeping an *Error found in the
// chain and classifying everything else as CodeInternal.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Message == "" && len(e.Problems) == 0 {
			return &Error{Code: e.Code, Message: err.Error(), RetryAfter: e.RetryAfter}
		}
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
