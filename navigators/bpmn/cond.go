package bpmn

import (
	"fmt"
	"math"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser/lexer"
	"github.com/expr-lang/expr/vm"

	"github.com/sextant-dev/sextant/sdk"
)

// compileEnv declares the names every expression sees. Process variables
// are also visible at the top level (the Zeebe convention), so undefined
// names are allowed and read from vars at run time.
var compileEnv = map[string]any{
	"input":    map[string]any{},
	"vars":     map[string]any{},
	"strategy": map[string]any{},
	"token":    map[string]any{},
}

// normalize turns the condition syntaxes found in the wild into expr
// syntax: a leading "=" marks a Zeebe (FEEL-style) expression, whose single
// "=" means equality; "${...}" wraps a Camunda 7 (JUEL) expression. It also
// returns, for each rune of the result, its index in the trimmed source, so
// that error columns point into what the author wrote.
func normalize(src string) (string, []int) {
	s := []rune(strings.TrimSpace(src))
	ident := func(from, to int) (string, []int) {
		pos := make([]int, 0, to-from+1)
		for i := from; i < to; i++ {
			pos = append(pos, i)
		}
		return string(s[from:to]), append(pos, to)
	}
	trim := func(from, to int) (int, int) {
		for from < to && isSpace(s[from]) {
			from++
		}
		for to > from && isSpace(s[to-1]) {
			to--
		}
		return from, to
	}
	n := len(s)
	if n >= 3 && (s[0] == '$' || s[0] == '#') && s[1] == '{' && s[n-1] == '}' {
		return ident(trim(2, n-1))
	}
	if n == 0 || s[0] != '=' {
		return ident(0, n)
	}
	from, to := trim(1, n)
	body, pos := ident(from, to)
	// FEEL compares with a single "=": rewrite those operators with expr's
	// own lexer so that strings and "==", "<=", "!=" stay untouched.
	toks, err := lexer.Lex(file.NewSource(body))
	if err != nil {
		return body, pos // let Compile report it with its position
	}
	runes := []rune(body)
	var out []rune
	var outPos []int
	last := 0
	for _, t := range toks {
		if t.Kind == lexer.Operator && t.Value == "=" && t.From >= last && t.From < len(runes) && runes[t.From] == '=' {
			out = append(out, runes[last:t.From]...)
			outPos = append(outPos, pos[last:t.From]...)
			out = append(out, '=', '=')
			outPos = append(outPos, pos[t.From], pos[t.From])
			last = t.From + 1
		}
	}
	out = append(out, runes[last:]...)
	outPos = append(outPos, pos[last:]...)
	return string(out), outPos
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// compileCond compiles a condition (asBool) or a value expression.
func compileCond(src string, asBool bool) (*cond, error) {
	s, pos := normalize(src)
	if s == "" {
		return nil, fmt.Errorf("empty expression")
	}
	opts := []expr.Option{expr.Env(compileEnv), expr.AllowUndefinedVariables()}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	prog, err := expr.Compile(s, opts...)
	if err != nil {
		if fe, ok := err.(*file.Error); ok && fe.From >= 0 && fe.From < len(pos) {
			return nil, fmt.Errorf("%s (column %d)", fe.Message, pos[fe.From]+1)
		}
		return nil, exprError(err)
	}
	return &cond{src: strings.TrimSpace(src), prog: prog, pos: pos}, nil
}

// exprError keeps the first line of an expr error (the message without the
// source snippet, which the problem's position replaces).
func exprError(err error) error {
	if fe, ok := err.(*file.Error); ok {
		return fmt.Errorf("%s (column %d)", fe.Message, fe.Column+1)
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return fmt.Errorf("%s", msg)
}

// evalEnv fills m (allocated when nil) with the environment an expression
// runs in.
func evalEnv(m map[string]any, env *sdk.Env, token map[string]any, extra map[string]any) map[string]any {
	if m == nil {
		m = make(map[string]any, len(env.Vars)+len(extra)+4)
	} else {
		clear(m)
	}
	for k, v := range env.Vars {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	m["input"] = orEmpty(env.Input)
	m["vars"] = orEmpty(env.Vars)
	m["strategy"] = orEmpty(env.Strategy)
	m["token"] = orEmpty(token)
	return m
}

var emptyMap = map[string]any{}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return emptyMap
	}
	return m
}

// run evaluates c on machine m (nil: a fresh one).
func (c *cond) run(m *vm.VM, env map[string]any) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if m == nil {
		m = &vm.VM{}
	}
	return m.Run(c.prog, env)
}

// test evaluates a boolean condition.
func (c *cond) test(m *vm.VM, env map[string]any) (bool, error) {
	v, err := c.run(m, env)
	if err != nil {
		return false, c.error(err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("condition %q gave %T, want bool", c.src, v)
	}
	return b, nil
}

// error renders an evaluation error with a column in the source text.
func (c *cond) error(err error) error {
	if fe, ok := err.(*file.Error); ok && fe.From >= 0 && fe.From < len(c.pos) {
		return fmt.Errorf("%s (column %d)", fe.Message, c.pos[fe.From]+1)
	}
	return exprError(err)
}

// toInt converts a JSON or expr number to an int.
func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case int32:
		return int(n), true
	case float64:
		if n != math.Trunc(n) || n < math.MinInt32 || n > math.MaxInt32 {
			return 0, false
		}
		return int(n), true
	case float32:
		return toInt(float64(n))
	case uint:
		return int(n), true
	case uint64:
		return int(n), true
	}
	return 0, false
}

// toList converts an input collection to a slice.
func toList(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, true
	case []int:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, true
	case []float64:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, true
	case []map[string]any:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, true
	case nil:
		return nil, false
	}
	return nil, false
}
