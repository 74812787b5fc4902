// Package schema declares configuration blocks once — field names, types,
// required-ness, allowed values, docs — and checks decoded TOML against
// them, reporting every problem with its file and line. Decoding into Go
// structs, validation and generated docs all read the same declaration
// (STYLE point 4).
package schema

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// Type is a field's TOML type.
type Type int

// The field types.
const (
	String     Type = iota
	Int             // integer (underscores allowed in TOML)
	Number          // integer or float
	Bool            // true/false
	Duration        // string such as "2m", "1h30m", "7d"
	StringList      // array of strings
	Table           // a sub-block (Block set)
	TableMap        // a table of named sub-blocks (Block set), e.g. [steps.NAME]
	TableArray      // an array of sub-blocks (Block set), e.g. [[gates]]
	StringMap       // a table of strings, e.g. set = { a = "expr" }
	Any             // anything (free-form plugin config)
)

func (t Type) String() string {
	return [...]string{"string", "integer", "number", "boolean", "duration", "list of strings",
		"table", "table of tables", "array of tables", "table of strings", "any value"}[t]
}

// Field declares one key.
type Field struct {
	Name     string
	Type     Type
	Required bool
	Default  any
	Enum     []string // allowed values of a String field
	Doc      string
	Block    *Block // for Table, TableMap, TableArray
}

// Block declares the keys of one table.
type Block struct {
	Name   string
	Fields []Field
	// Open blocks accept keys they do not declare (plugin configuration).
	Open bool
}

// Lookup returns the field called name.
func (b *Block) Lookup(name string) (Field, bool) {
	for _, f := range b.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

func (b *Block) names() []string {
	out := make([]string, len(b.Fields))
	for i, f := range b.Fields {
		out[i] = f.Name
	}
	return out
}

// Checker checks decoded TOML data against a Block.
type Checker struct {
	File  string
	Index *tomlpos.Index
	probs []sdk.Problem
}

// Problems returns what the checker found, ordered by line.
func (c *Checker) Problems() []sdk.Problem {
	sort.SliceStable(c.probs, func(i, j int) bool { return c.probs[i].Line < c.probs[j].Line })
	return c.probs
}

// Add records a problem at key path. A key with no line of its own (a
// missing key) is placed at its table's header, or at line 1.
func (c *Checker) Add(path []string, format string, args ...any) {
	line := c.Index.Line(path...)
	if line == 0 {
		line = 1
	}
	c.probs = append(c.probs, sdk.Problem{File: c.File, Line: line, Element: Join(path), Message: fmt.Sprintf(format, args...)})
}

// Append records problems found elsewhere (by a nested Checker).
func (c *Checker) Append(p ...sdk.Problem) { c.probs = append(c.probs, p...) }

// Join renders a key path the way users write it: steps.classify.provider,
// gates[1].use.
func Join(path []string) string {
	var b strings.Builder
	for i, p := range path {
		if _, err := strconv.Atoi(p); err == nil && i > 0 {
			fmt.Fprintf(&b, "[%s]", p)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// Check checks data against b, recording every problem.
func (c *Checker) Check(data map[string]any, b *Block, path []string) {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return c.Index.Line(append(path, keys[i])...) < c.Index.Line(append(path, keys[j])...) ||
			(c.Index.Line(append(path, keys[i])...) == c.Index.Line(append(path, keys[j])...) && keys[i] < keys[j])
	})
	for _, k := range keys {
		p := append(append([]string(nil), path...), k)
		f, ok := b.Lookup(k)
		if !ok {
			if !b.Open {
				c.Add(p, "unknown key%s", suggest.Hint(k, b.names()))
			}
			continue
		}
		c.value(data[k], f, p)
	}
	for _, f := range b.Fields {
		if _, ok := data[f.Name]; !ok && f.Required {
			c.Add(append(append([]string(nil), path...), f.Name), "missing (required%s)", docHint(f))
		}
	}
}

func docHint(f Field) string {
	if f.Doc == "" {
		return ""
	}
	return ": " + f.Doc
}

func (c *Checker) value(v any, f Field, p []string) {
	wrong := func() { c.Add(p, "want %s, got %s", f.Type, describe(v)) }
	switch f.Type {
	case String:
		s, ok := v.(string)
		if !ok {
			wrong()
			return
		}
		if len(f.Enum) > 0 && !contains(f.Enum, s) {
			c.Add(p, "%q is not one of %s%s", s, strings.Join(f.Enum, ", "), suggest.Hint(s, f.Enum))
		}
	case Int:
		if _, ok := v.(int64); !ok {
			wrong()
		}
	case Number:
		switch n := v.(type) {
		case int64:
		case float64:
			if math.IsNaN(n) || math.IsInf(n, 0) {
				c.Add(p, "want a finite number, got %v", n)
			}
		default:
			wrong()
		}
	case Bool:
		if _, ok := v.(bool); !ok {
			wrong()
		}
	case Duration:
		s, ok := v.(string)
		if !ok {
			wrong()
			return
		}
		if _, err := ParseDuration(s); err != nil {
			c.Add(p, "%v", err)
		}
	case StringList:
		list, ok := v.([]any)
		if !ok {
			if _, typed := v.([]string); typed {
				return
			}
			wrong()
			return
		}
		for i, el := range list {
			if _, ok := el.(string); !ok {
				c.Add(append(p, strconv.Itoa(i)), "want string, got %s", describe(el))
			} else if len(f.Enum) > 0 && !contains(f.Enum, el.(string)) {
				c.Add(append(p, strconv.Itoa(i)), "%q is not one of %s%s", el, strings.Join(f.Enum, ", "), suggest.Hint(el.(string), f.Enum))
			}
		}
	case StringMap:
		m, ok := v.(map[string]any)
		if !ok {
			wrong()
			return
		}
		for k, el := range m {
			if _, ok := el.(string); !ok {
				c.Add(append(p, k), "want string, got %s", describe(el))
			}
		}
	case Table:
		m, ok := v.(map[string]any)
		if !ok {
			wrong()
			return
		}
		c.Check(m, f.Block, p)
	case TableMap:
		m, ok := v.(map[string]any)
		if !ok {
			wrong()
			return
		}
		for k, el := range m {
			sub, ok := el.(map[string]any)
			if !ok {
				c.Add(append(p, k), "want table, got %s", describe(el))
				continue
			}
			c.Check(sub, f.Block, append(p, k))
		}
	case TableArray:
		list, ok := v.([]map[string]any)
		if !ok {
			if anyList, ok2 := v.([]any); ok2 {
				for i, el := range anyList {
					sub, ok := el.(map[string]any)
					if !ok {
						c.Add(append(p, strconv.Itoa(i)), "want table, got %s", describe(el))
						continue
					}
					c.Check(sub, f.Block, append(p, strconv.Itoa(i)))
				}
				return
			}
			wrong()
			return
		}
		for i, sub := range list {
			c.Check(sub, f.Block, append(p, strconv.Itoa(i)))
		}
	case Any:
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string %q", x)
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("number %v", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case []any, []map[string]any:
		return "array"
	case map[string]any:
		return "table"
	case time.Time:
		return "datetime"
	}
	return fmt.Sprintf("%T", v)
}

// ParseDuration parses Go durations plus a day unit: "2m", "1h30m", "7d", "1d12h".
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(t, 'd'); i > 0 {
		n, err := strconv.Atoi(t[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration (want e.g. 30s, 2m, 1h30m, 7d)", s)
		}
		days = time.Duration(n) * 24 * time.Hour
		t = t[i+1:]
		if t == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (want e.g. 30s, 2m, 1h30m, 7d)", s)
	}
	return days + d, nil
}

// Doc renders a block's declaration as a reference, one key per line.
func Doc(b *Block, prefix string) string {
	var sb strings.Builder
	for _, f := range b.Fields {
		key := f.Name
		if prefix != "" {
			key = prefix + "." + f.Name
		}
		req := ""
		if f.Required {
			req = ", required"
		}
		def := ""
		if f.Default != nil {
			def = fmt.Sprintf(", default %v", f.Default)
		}
		enum := ""
		if len(f.Enum) > 0 {
			enum = " (" + strings.Join(f.Enum, " | ") + ")"
		}
		fmt.Fprintf(&sb, "%-32s %s%s%s%s  %s\n", key, f.Type, enum, req, def, f.Doc)
		if f.Block != nil {
			sub := key
			switch f.Type {
			case TableMap:
				sub = key + ".NAME"
			case TableArray:
				sub = key + "[]"
			}
			sb.WriteString(Doc(f.Block, sub))
		}
	}
	return sb.String()
}
