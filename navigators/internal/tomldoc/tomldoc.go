// Package tomldoc decodes a routine written in TOML strictly: every value is
// read through a Table that checks its type, every key that the schema does
// not read is reported as unknown (with the nearest known key), and every
// problem carries the file and line of the key it is about. Problems are
// collected, not returned one by one, so that a user sees all of them at once.
//
// The package must not know any routine schema; the navigators declare theirs.
package tomldoc

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// Doc is one TOML document being decoded. It collects problems.
type Doc struct {
	file     string
	ix       *tomlpos.Index
	problems []sdk.Problem
}

// Parse parses src. A syntax error, or a document over tomlpos's size or
// depth limit, is returned at once as an sdk.Invalid error with one
// positioned problem; otherwise the root table is returned and further
// problems are collected on the Doc.
func Parse(file string, src []byte) (*Doc, *Table, error) {
	ix, err := tomlpos.Scan(file, src)
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	if _, err := toml.Decode(string(src), &m); err != nil {
		p := sdk.Problem{File: file, Message: err.Error()}
		var pe toml.ParseError
		if errors.As(err, &pe) {
			p.Line = pe.Position.Line
			p.Message = pe.Message
			if pe.LastKey != "" {
				p.Element = pe.LastKey
			}
		}
		// A problem is one line: the parser quotes bad input verbatim.
		p.Message = oneLine.Replace(p.Message)
		p.Element = oneLine.Replace(p.Element)
		return nil, nil, sdk.Invalid(p)
	}
	d := &Doc{file: file, ix: ix}
	return d, &Table{doc: d, m: m}, nil
}

var oneLine = strings.NewReplacer("\r", `\r`, "\n", `\n`)

// Err returns the collected problems, ordered by line, as an sdk.Invalid
// error, or nil when there are none.
func (d *Doc) Err() error {
	sort.SliceStable(d.problems, func(i, j int) bool { return d.problems[i].Line < d.problems[j].Line })
	return sdk.Invalid(d.problems...)
}

// Problems returns the number of problems collected so far.
func (d *Doc) Problems() int { return len(d.problems) }

// Add records a problem at line about element.
func (d *Doc) Add(line int, element, format string, args ...any) {
	d.problems = append(d.problems, sdk.Problem{File: d.file, Line: line, Element: oneLine.Replace(element),
		Message: oneLine.Replace(fmt.Sprintf(format, args...))})
}

// line returns the line of the indexed path, or of its nearest recorded
// ancestor.
func (d *Doc) line(path []string) int { return d.ix.Line(path...) }

// Table is one TOML table of a Doc.
type Table struct {
	doc *Doc
	loc []string // indexed path, for line lookup
	// Name is the table's path as shown in problems ("tasks.fetch",
	// "steps.draft"); it can be changed once the table's id is known.
	Name string
	m    map[string]any
	used map[string]bool
}

// Doc returns the document t belongs to.
func (t *Table) Doc() *Doc { return t.doc }

// Line returns the line of key in t; with no key, the line of t itself.
func (t *Table) Line(key ...string) int {
	return t.doc.line(append(append([]string(nil), t.loc...), key...))
}

// Element returns the problem element for key in t.
func (t *Table) Element(key string) string {
	if key == "" {
		return t.Name
	}
	if t.Name == "" {
		return key
	}
	return t.Name + "." + key
}

// Errorf records a problem about key (or about t itself when key is "").
func (t *Table) Errorf(key, format string, args ...any) {
	if key == "" {
		t.doc.Add(t.Line(), t.Name, format, args...)
		return
	}
	t.doc.Add(t.Line(key), t.Element(key), format, args...)
}

// ErrorfAt records a problem about element n of the array at key.
func (t *Table) ErrorfAt(key string, n int, format string, args ...any) {
	t.doc.Add(t.Line(key, strconv.Itoa(n)), t.Element(key), format, args...)
}

// Has reports whether key is set.
func (t *Table) Has(key string) bool {
	_, ok := t.m[key]
	return ok
}

func (t *Table) get(key string) (any, bool) {
	v, ok := t.m[key]
	if ok {
		if t.used == nil {
			t.used = map[string]bool{}
		}
		t.used[key] = true
	}
	return v, ok
}

func (t *Table) wrong(key, want string, v any) {
	t.Errorf(key, "want %s, got %s", want, describe(v))
}

// String reads a string. ok is false when key is absent or not a string
// (which is reported).
func (t *Table) String(key string) (string, bool) {
	v, ok := t.get(key)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		t.wrong(key, "a string", v)
	}
	return s, ok
}

// Strings reads an array of strings.
func (t *Table) Strings(key string) ([]string, bool) {
	v, ok := t.get(key)
	if !ok {
		return nil, false
	}
	arr, ok := v.([]any)
	if !ok {
		t.wrong(key, "an array of strings", v)
		return nil, false
	}
	out := make([]string, 0, len(arr))
	good := true
	for n, e := range arr {
		s, ok := e.(string)
		if !ok {
			t.ErrorfAt(key, n, "element %d: want a string, got %s", n, describe(e))
			good = false
			continue
		}
		out = append(out, s)
	}
	return out, good
}

// Int reads an integer.
func (t *Table) Int(key string) (int64, bool) {
	v, ok := t.get(key)
	if !ok {
		return 0, false
	}
	i, ok := v.(int64)
	if !ok {
		t.wrong(key, "an integer", v)
	}
	return i, ok
}

// Bool reads a boolean.
func (t *Table) Bool(key string) (bool, bool) {
	v, ok := t.get(key)
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	if !ok {
		t.wrong(key, "a boolean", v)
	}
	return b, ok
}

// Duration reads a Go duration string ("1s", "1m30s"), which must not be
// negative.
func (t *Table) Duration(key string) (time.Duration, bool) {
	s, ok := t.String(key)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Errorf(key, "want a duration such as \"1s\" or \"500ms\", got %q", s)
		return 0, false
	}
	if d < 0 {
		t.Errorf(key, "want a duration that is not negative, got %q", s)
		return 0, false
	}
	return d, true
}

// Table reads a sub-table.
func (t *Table) Table(key string) (*Table, bool) {
	v, ok := t.get(key)
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.wrong(key, "a table", v)
		return nil, false
	}
	return t.sub(key, m, []string{key}, t.Element(key)), true
}

// Tables reads an array of tables ([[key]] or key = [{...}, ...]).
func (t *Table) Tables(key string) ([]*Table, bool) {
	v, ok := t.get(key)
	if !ok {
		return nil, false
	}
	var ms []map[string]any
	switch v := v.(type) {
	case []map[string]any:
		ms = v
	case []any:
		for n, e := range v {
			m, ok := e.(map[string]any)
			if !ok {
				t.ErrorfAt(key, n, "element %d: want a table, got %s", n, describe(e))
				return nil, false
			}
			ms = append(ms, m)
		}
	default:
		t.wrong(key, "an array of tables", v)
		return nil, false
	}
	out := make([]*Table, len(ms))
	for n, m := range ms {
		out[n] = t.sub(key, m, []string{key, strconv.Itoa(n)}, fmt.Sprintf("%s[%d]", t.Element(key), n))
	}
	return out, true
}

func (t *Table) sub(key string, m map[string]any, rel []string, name string) *Table {
	return &Table{doc: t.doc, loc: append(append([]string(nil), t.loc...), rel...), Name: name, m: m}
}

// Keys returns the keys of t in document order.
func (t *Table) Keys() []string {
	keys := make([]string, 0, len(t.m))
	for k := range t.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		li, lj := t.Line(keys[i]), t.Line(keys[j])
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// Strict reports every key of t that was not read, suggesting the nearest
// of known.
func (t *Table) Strict(known []string) {
	for _, k := range t.Keys() {
		if t.used[k] {
			continue
		}
		t.doc.Add(t.Line(k), t.Element(k), "unknown key%s", Suggest(k, known))
	}
}

// describe names a decoded TOML value's type for "want X, got Y".
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case int64:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return fmt.Sprintf("float %v", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case []any:
		return "an array"
	case []map[string]any:
		return "an array of tables"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a datetime"
	}
	return fmt.Sprintf("%T", v)
}

// Suggest returns ` (did you mean "x"?)` for the candidate nearest to name,
// or "" when none is near enough to be a likely typo.
func Suggest(name string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := distance(strings.ToLower(name), strings.ToLower(c))
		if d > max(1, min(len(name), len(c))/3) {
			continue
		}
		if bestD < 0 || d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	if bestD < 0 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the optimal string alignment distance (Levenshtein plus
// transpositions) between a and b, by bytes.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return max(len(a), len(b))
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
