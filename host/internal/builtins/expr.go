package builtins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"

	"github.com/sextant-dev/sextant/sdk"
)

// ExprSyntaxError is an expression that does not parse, positioned as
// expr:LINE:COLUMN: message where the language says where. It is
// sdk.ErrInvalid: the caller wrote it.
type ExprSyntaxError struct{ msg string }

func (e *ExprSyntaxError) Error() string { return e.msg }

// Is makes the error sdk.ErrInvalid.
func (e *ExprSyntaxError) Is(target error) bool { return target == sdk.ErrInvalid }

// ExprValue is the value of an evaluated expression, printed as its
// language prints values.
type ExprValue struct {
	v    any
	feel bool
}

// EvalFEEL evaluates the FEEL expression src over vars (json.Number values
// are read as exact decimals). A syntax error is an *ExprSyntaxError.
func EvalFEEL(src string, vars map[string]any) (ExprValue, error) {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	x, err := ParseFEEL(src, names...)
	if err != nil {
		return ExprValue{}, &ExprSyntaxError{fmt.Sprintf("expr:%v", err)}
	}
	v, err := x.Eval(vars)
	if err != nil {
		return ExprValue{}, fmt.Errorf("evaluate: %w", err)
	}
	return ExprValue{v: v, feel: true}, nil
}

// EvalExprLang evaluates the expr-lang expression src (the language of
// DAG and chain "when" clauses) over vars. A syntax or type error is an
// *ExprSyntaxError.
func EvalExprLang(src string, vars map[string]any) (ExprValue, error) {
	prog, err := expr.Compile(src, expr.Env(vars))
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			return ExprValue{}, &ExprSyntaxError{fmt.Sprintf("expr:%d:%d: %s", fe.Line, fe.Column+1, fe.Message)}
		}
		return ExprValue{}, &ExprSyntaxError{fmt.Sprintf("expr: %v", err)}
	}
	v, err := expr.Run(prog, vars)
	if err != nil {
		return ExprValue{}, fmt.Errorf("evaluate: %w", err)
	}
	return ExprValue{v: v}, nil
}

// Text is the value as its language writes it: FEEL text (strings quoted,
// dates as @"2024-01-31"), or for expr-lang a quoted string, nil, a
// scalar, else JSON.
func (x ExprValue) Text() string {
	if x.feel {
		return FormatFEEL(x.v)
	}
	switch v := x.v.(type) {
	case string:
		return strconv.Quote(v)
	case nil:
		return "nil"
	case bool, int, int64, float64:
		return fmt.Sprint(v)
	}
	out, err := json.Marshal(x.v)
	if err != nil {
		return fmt.Sprintf("%v", x.v)
	}
	return string(out)
}

// Write prints the value to w: as JSON when asJSON, else as its Text on
// a line.
func (x ExprValue) Write(w io.Writer, asJSON bool) error {
	out, err := []byte(x.Text()+"\n"), error(nil)
	if asJSON {
		out, err = x.JSON()
	}
	if err == nil {
		_, err = w.Write(out)
	}
	return err
}

// JSON is the value as indented JSON with a final newline; FEEL dates,
// times and durations are their FEEL string() form.
func (x ExprValue) JSON() ([]byte, error) {
	var buf bytes.Buffer
	if !x.feel {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(x.v); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	out, err := FEELJSON(x.v)
	if err != nil {
		return nil, err
	}
	if err := json.Indent(&buf, out, "", "  "); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}
