package bpmn

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/navigators/feel"
	"github.com/sextant-dev/sextant/sdk"
)

// Expressions are FEEL (navigators/feel), as Zeebe evaluates them: flow
// conditions, multi-instance collections and conditions, input/output
// mapping sources and timer values. A leading "=" marks the Zeebe style;
// text without it is FEEL too (a plain condition). "${...}" and "#{...}"
// (Camunda 7 JUEL) are read by translating the JUEL operators of the
// common subset (==, &&, ||, !, eq, ne, lt, gt, le, ge, 'strings') into
// FEEL; anything else in them is a positioned FEEL syntax error.

// cond is a parsed expression.
type cond struct {
	src string // as written, trimmed
	x   *feel.Expr
}

// compileCond parses an expression. The error gives the column (and the
// line, for expressions over several lines) in the text as written.
func compileCond(src string) (*cond, error) {
	s := strings.TrimSpace(src)
	body, pos := feelText(s)
	if strings.TrimSpace(body) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	x, err := feel.Parse(body)
	if err != nil {
		var se *feel.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%s (%s)", se.Msg, where(s, body, pos, se.Pos))
		}
		return nil, err
	}
	return &cond{src: s, x: x}, nil
}

// where renders a FEEL position in body as a position in s, the text as
// written: body[i] came from s[pos[i]] (runes).
func where(s, body string, pos []int, p feel.Pos) string {
	// Rune index of the error in body.
	idx := utf8.RuneCountInString(body[:min(max(p.Offset, 0), len(body))])
	src := []rune(s)
	at := len(src)
	if idx < len(pos) {
		at = pos[idx]
	} else if len(pos) > 0 {
		at = pos[len(pos)-1] + 1
	}
	line, col := 1, 1
	for i := 0; i < at && i < len(src); i++ {
		if src[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	if line > 1 {
		return fmt.Sprintf("line %d, column %d", line, col)
	}
	return fmt.Sprintf("column %d", col)
}

// feelText returns the FEEL text of an expression as written, and for each
// of its runes the index of the rune of s it came from.
func feelText(s string) (string, []int) {
	r := []rune(s)
	n := len(r)
	if n >= 3 && (r[0] == '$' || r[0] == '#') && r[1] == '{' && r[n-1] == '}' {
		return juel(r, 2, n-1)
	}
	from := 0
	if n > 0 && r[0] == '=' {
		from = 1
	}
	pos := make([]int, 0, n-from)
	for i := from; i < n; i++ {
		pos = append(pos, i)
	}
	return string(r[from:]), pos
}

// juel translates the JUEL expression r[from:to] into FEEL.
func juel(r []rune, from, to int) (string, []int) {
	j := &juelText{r: r, from: from, to: to}
	for i := from; i < to; {
		i = j.next(i)
	}
	return string(j.out), j.pos
}

// juelWords are JUEL's operator words and their FEEL.
var juelWords = map[string]string{"eq": "=", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">=", "null": "null"}

// juelText is a JUEL expression being translated: r[from:to] into out,
// where out[k] came from r[pos[k]].
type juelText struct {
	r        []rune
	from, to int
	out      []rune
	pos      []int
}

func (j *juelText) emit(at int, s string) {
	for _, c := range s {
		j.out = append(j.out, c)
		j.pos = append(j.pos, at)
	}
}

func isJUELWord(c rune) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// next translates what starts at r[i] and returns where the rest starts.
func (j *juelText) next(i int) int {
	r, to := j.r, j.to
	c := r[i]
	switch {
	case c == '\'' || c == '"':
		return j.str(i)
	case c == '=' && i+1 < to && r[i+1] == '=':
		j.emit(i, "=")
		return i + 2
	case c == '&' && i+1 < to && r[i+1] == '&':
		j.emit(i, " and ")
		return i + 2
	case c == '|' && i+1 < to && r[i+1] == '|':
		j.emit(i, " or ")
		return i + 2
	case c == '!' && (i+1 >= to || r[i+1] != '='):
		return j.not(i)
	case isJUELWord(c) && (i == j.from || !isJUELWord(r[i-1])):
		return j.word(i)
	}
	j.emit(i, string(c))
	return i + 1
}

// str translates the string starting at r[i]: JUEL quotes with either
// quote, FEEL with double quotes.
func (j *juelText) str(i int) int {
	r, to := j.r, j.to
	q := r[i]
	j.emit(i, `"`)
	k := i + 1
	for ; k < to && r[k] != q; k++ {
		if r[k] == '\\' && k+1 < to {
			j.emit(k, string(r[k:k+2]))
			k++
			continue
		}
		if r[k] == '"' {
			j.emit(k, `\"`)
			continue
		}
		j.emit(k, string(r[k]))
	}
	if k < to {
		j.emit(k, `"`)
		k++
	}
	return k
}

// not translates the ! at r[i]: !name.path becomes not(name.path), !(
// becomes not(.
func (j *juelText) not(i int) int {
	r, to := j.r, j.to
	k := i + 1
	for k < to && r[k] == ' ' {
		k++
	}
	if k < to && r[k] == '(' {
		j.emit(i, "not")
		return k
	}
	e := k
	for e < to && isJUELWord(r[e]) {
		e++
	}
	if e == k {
		j.emit(i, "!")
		return i + 1
	}
	j.emit(i, "not(")
	for m := k; m < e; m++ {
		j.emit(m, string(r[m]))
	}
	j.emit(e-1, ")")
	return e
}

// word translates the word starting at r[i]: an operator word into its
// FEEL, a name as it is.
func (j *juelText) word(i int) int {
	r, to := j.r, j.to
	k := i
	for k < to && isJUELWord(r[k]) {
		k++
	}
	if f, ok := juelWords[string(r[i:k])]; ok {
		j.emit(i, f)
		return k
	}
	for m := i; m < k; m++ {
		j.emit(m, string(r[m]))
	}
	return k
}

// scope is what expressions see, without building a map per evaluation:
// input, vars, strategy (sdk.Env) and token (the token's attributes) by
// those names, then the extra names of the evaluation (multi-instance
// completion counters, a step's output), then the local variables of the
// token and of its enclosing scopes, innermost first, then every process
// variable by its own name, then the start input's variables (Zeebe: the
// variables an instance starts with are process variables; a process
// variable of the same name, written later, wins).
type scope struct {
	env   *sdk.Env
	token map[string]any
	at    *tok           // the token evaluated at: its and its scopes' locals are seen by name
	run   *run           // the run of at
	extra map[string]any // names of this evaluation only
	out   map[string]any // a step's output, for output mappings
}

var _ feel.Scope = (*scope)(nil)

// Lookup implements feel.Scope.
func (s *scope) Lookup(name string) (any, bool) {
	switch name {
	case "input":
		return orEmpty(s.env.Input), true
	case "vars":
		return orEmpty(s.env.Vars), true
	case "strategy":
		return orEmpty(s.env.Strategy), true
	case "token":
		return orEmpty(s.token), true
	}
	if v, ok := s.extra[name]; ok {
		return v, true
	}
	if s.out != nil {
		if v, ok := s.out[name]; ok {
			return v, true
		}
	}
	if o := s.run.owner(s.at, name); o != nil {
		return o.attr(name), true
	}
	if v, ok := s.env.Vars[name]; ok {
		return v, true
	}
	v, ok := s.env.Input[name]
	return v, ok
}

var emptyMap = map[string]any{}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return emptyMap
	}
	return m
}

// eval evaluates c. FEEL never fails on data (a mismatch is null); the
// error is an exceeded evaluation limit.
func (c *cond) eval(s *scope) (any, error) {
	return c.x.EvalScopeAt(s, s.env.Now)
}

// test evaluates a condition: true or false. Anything else, null
// included (a missing variable, a comparison of mismatched types), is an
// error, as in Zeebe, where it raises an incident: a condition that cannot
// be decided must not silently count as false and send the token down the
// default flow.
func (c *cond) test(s *scope) (bool, error) {
	v, err := c.eval(s)
	if err != nil {
		return false, err
	}
	if b, ok := v.(bool); ok {
		return b, nil
	}
	msg := fmt.Sprintf("condition %q gave %s, want a boolean", c.src, feel.Format(v))
	if v == nil {
		if missing := c.missing(s); len(missing) > 0 {
			msg += fmt.Sprintf(" (no variable %s is set)", strings.Join(missing, ", "))
		}
	}
	return false, errors.New(msg)
}

// missing lists, quoted, the variables c reads that s does not hold, to
// explain a null result.
func (c *cond) missing(s *scope) []string {
	var out []string
	for _, name := range c.x.Names() {
		if _, ok := s.Lookup(name); !ok {
			out = append(out, strconv.Quote(name))
		}
	}
	return out
}

// value evaluates c into plain Go values, as the host and the wire carry
// them: numbers as float64, contexts as maps, temporal values as their
// FEEL string.
func (c *cond) value(s *scope) (any, error) {
	v, err := c.eval(s)
	if err != nil {
		return nil, err
	}
	return plain(v), nil
}

// plain converts a FEEL value into what JSON decoding would give.
func plain(v any) any {
	switch x := feel.ToJSON(v).(type) {
	case feel.Number:
		return x.Float64()
	case []any:
		for i := range x {
			x[i] = plainNum(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = plainNum(x[k])
		}
		return x
	default:
		return x
	}
}

func plainNum(v any) any {
	switch x := v.(type) {
	case feel.Number:
		return x.Float64()
	case []any, map[string]any:
		return plain(x)
	}
	return v
}

// toInt converts a JSON or FEEL number to an int.
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
	case feel.Number:
		return toInt(n.Float64())
	}
	return 0, false
}

// toList converts an input collection to a slice.
func toList(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case nil:
		return nil, false
	}
	return nil, false
}

// timerText renders the value of a timer expression for the host: a
// duration, date-time or cycle as its ISO 8601 text.
func timerText(v any) string {
	if s, ok := plain(v).(string); ok {
		return s
	}
	return feel.Format(v)
}
