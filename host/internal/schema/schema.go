// Package schema declares configuration blocks once — field names, types,
// required-ness, defaults, bounds, allowed values, docs — and from that one
// declaration checks decoded TOML (every problem with its file and line),
// fills in defaults (ApplyDefaults) and lists every key for reference docs
// (Walk, Doc). Nothing else may re-code a default or a bound (STYLE point 4).
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
	Size            // string such as "64MiB", "512KB", "1GiB"
	Datetime        // TOML datetime, such as 2026-02-09T10:30:00Z
	NumberMap       // a table of numbers, e.g. [parameters]
	RangeMap        // a table of [lo, hi] number pairs, e.g. [parameter_bounds]
)

func (t Type) String() string {
	return [...]string{"string", "integer", "number", "boolean", "duration", "list of strings",
		"table", "table of tables", "array of tables", "table of strings", "any value", "size",
		"datetime", "table of numbers", "table of [lo, hi] pairs"}[t]
}

// Bound restricts the values of an Int, Number, Duration or Size field.
type Bound int

// The bounds.
const (
	// Unbounded accepts any value of the type.
	Unbounded Bound = iota
	// Positive accepts values > 0: a limit of 0 or less would mean
	// "nothing may run" or, worse, be read as "no limit".
	Positive
	// NonNegative accepts values >= 0.
	NonNegative
)

func (b Bound) String() string {
	return [...]string{"", "> 0", ">= 0"}[b]
}

// Field declares one key.
type Field struct {
	Name     string
	Type     Type
	Required bool
	// Default is the value ApplyDefaults gives an absent key, written as
	// TOML decodes it (string, int64 or int, float64, bool, []string).
	Default any
	Bound   Bound
	Enum    []string // allowed values of a String field
	Doc     string
	Block   *Block // for Table, TableMap, TableArray
}

// Block declares the keys of one table.
type Block struct {
	Name   string
	Fields []Field
	// Open blocks accept keys they do not declare (plugin configuration).
	Open bool
	// Variants, when set, adds keys by the value of one of the block's
	// own keys: a [[gates]] entry takes the options of the gate its use
	// names. Check does not apply them (the loader checks the case it
	// resolves, as it must also resolve plugins); Walk, Doc and the JSON
	// Schema read them, so the reference and the loader share one table.
	Variants *Variants
}

// Variants declares the extra keys of a block by the value of its key Key.
// A value with a case takes the block's fields and the case's, and no
// other; a value without one (a plugin's name) keeps the block as it is.
type Variants struct {
	Key   string
	Cases map[string][]Field
}

// Names returns the case values in order.
func (v *Variants) Names() []string {
	out := make([]string, 0, len(v.Cases))
	for k := range v.Cases {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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

// Problems returns what the checker found: its own file's problems ordered
// by line, then those of other files (Append) in the order they came.
func (c *Checker) Problems() []sdk.Problem {
	sort.SliceStable(c.probs, func(i, j int) bool {
		a, b := c.probs[i], c.probs[j]
		switch {
		case a.File == c.File && b.File == c.File:
			return a.Line < b.Line
		default:
			return a.File == c.File && b.File != c.File
		}
	})
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
			} else {
				c.finite(data[k], p)
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
		n, ok := v.(int64)
		if !ok {
			wrong()
			return
		}
		c.bound(p, f, float64(n), fmt.Sprint(n), "an integer")
	case Number:
		switch n := v.(type) {
		case int64:
			c.bound(p, f, float64(n), fmt.Sprint(n), "a number")
		case float64:
			if math.IsNaN(n) || math.IsInf(n, 0) {
				c.Add(p, "want a finite number, got %v", n)
				return
			}
			c.bound(p, f, n, fmt.Sprint(n), "a number")
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
		d, err := ParseDuration(s)
		if err != nil {
			c.Add(p, "%v", err)
			return
		}
		c.bound(p, f, float64(d), fmt.Sprintf("%q", s), "a duration")
	case Size:
		s, ok := v.(string)
		if !ok {
			wrong()
			return
		}
		if _, err := ParseSize(s); err != nil {
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
	case Datetime:
		if _, ok := v.(time.Time); !ok {
			wrong()
		}
	case NumberMap, RangeMap:
		m, ok := v.(map[string]any)
		if !ok {
			wrong()
			return
		}
		num := func(el any) bool {
			switch n := el.(type) {
			case int64:
				return true
			case float64:
				return !math.IsNaN(n) && !math.IsInf(n, 0)
			}
			return false
		}
		for k, el := range m {
			if f.Type == NumberMap && !num(el) {
				c.Add(append(p, k), "want a finite number, got %s", describe(el))
			}
			if pair, ok := el.([]any); f.Type == RangeMap && (!ok || len(pair) != 2 || !num(pair[0]) || !num(pair[1])) {
				c.Add(append(p, k), "want [lo, hi], got %s", describe(el))
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
		c.finite(v, p)
	}
}

// finite reports the NaN and infinities in a value the schema takes as it
// is (plugin configuration, open tables): TOML has them, but the value
// reaches plugins and the store as JSON, which has neither, and would
// fail there unpositioned.
func (c *Checker) finite(v any, p []string) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			c.Add(p, "want a finite number, got %v (JSON, which plugins read, has no NaN or infinity)", x)
		}
	case map[string]any:
		for k, el := range x {
			c.finite(el, append(append([]string(nil), p...), k))
		}
	case []any:
		for i, el := range x {
			c.finite(el, append(append([]string(nil), p...), strconv.Itoa(i)))
		}
	case []map[string]any:
		for i, el := range x {
			c.finite(el, append(append([]string(nil), p...), strconv.Itoa(i)))
		}
	}
}

// bound reports a value outside the field's bound.
func (c *Checker) bound(p []string, f Field, n float64, shown, what string) {
	switch {
	case f.Bound == Positive && n <= 0:
		c.Add(p, "want %s > 0, got %s", what, shown)
	case f.Bound == NonNegative && n < 0:
		c.Add(p, "want %s >= 0, got %s", what, shown)
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

// ParseSize parses a byte size: a positive whole number with an optional
// unit B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
func ParseSize(s string) (uint64, error) {
	units := []struct {
		suffix string
		mult   uint64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	t := strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || n == 0 || n > math.MaxUint64/mult {
		return 0, fmt.Errorf("%q is not a size (want e.g. 64MiB)", s)
	}
	return n * mult, nil
}

// ApplyDefaults gives every absent key of data that b declares a default
// its default, in place: in data, in its Table sub-blocks (created when
// absent and they declare defaults), in each entry of a TableMap and in
// each element of a TableArray. A key the user wrote is never changed.
//
// Call it once, after Check, on the data that will be decoded; a default
// is then spelled in the declaration and nowhere else.
func ApplyDefaults(data map[string]any, b *Block) {
	for _, f := range b.Fields {
		v, present := data[f.Name]
		switch {
		case f.Block != nil && f.Type == Table:
			m, ok := v.(map[string]any)
			if !present && hasDefaults(f.Block) {
				m, ok = map[string]any{}, true
				data[f.Name] = m
			}
			if ok {
				ApplyDefaults(m, f.Block)
			}
		case f.Block != nil && f.Type == TableMap:
			if m, ok := v.(map[string]any); ok {
				for _, el := range m {
					if sub, ok := el.(map[string]any); ok {
						ApplyDefaults(sub, f.Block)
					}
				}
			}
		case f.Block != nil && f.Type == TableArray:
			switch list := v.(type) {
			case []map[string]any:
				for _, sub := range list {
					ApplyDefaults(sub, f.Block)
				}
			case []any:
				for _, el := range list {
					if sub, ok := el.(map[string]any); ok {
						ApplyDefaults(sub, f.Block)
					}
				}
			}
		case !present && f.Default != nil:
			data[f.Name] = defaultValue(f.Default)
		}
	}
}

// hasDefaults reports whether b or a Table below it declares a default.
func hasDefaults(b *Block) bool {
	for _, f := range b.Fields {
		if f.Default != nil || (f.Type == Table && f.Block != nil && hasDefaults(f.Block)) {
			return true
		}
	}
	return false
}

// defaultValue returns a fresh copy of a declared default in the form TOML
// decodes to, so defaulted and written keys decode alike.
func defaultValue(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	}
	return v
}

// Key is one declared key, as Walk reports it.
type Key struct {
	// Path is the key as users write it: limits.timeout, steps.NAME.kind,
	// gates[].use.
	Path  string
	Field Field
	// When is the variant the key belongs to, as TOML: use = "budget";
	// empty for a key every block of its kind takes.
	When string
}

// Walk calls fn for every key b declares, depth first in declaration
// order, with its full path under prefix ("" at the top); a block's
// variant keys follow its own, by case name. Reference docs
// and JSON Schemas are generated from it.
func Walk(b *Block, prefix string, fn func(Key)) {
	for _, f := range b.Fields {
		key := f.Name
		if prefix != "" {
			key = prefix + "." + f.Name
		}
		fn(Key{Path: key, Field: f})
		if f.Block != nil {
			sub := key
			switch f.Type {
			case TableMap:
				sub = key + ".NAME"
			case TableArray:
				sub = key + "[]"
			}
			Walk(f.Block, sub, fn)
		}
	}
	if v := b.Variants; v != nil {
		for _, name := range v.Names() {
			when := fmt.Sprintf("%s = %q", v.Key, name)
			for _, f := range v.Cases[name] {
				key := f.Name
				if prefix != "" {
					key = prefix + "." + f.Name
				}
				fn(Key{Path: key, Field: f, When: when})
			}
		}
	}
}

// Doc renders a block's declaration as a reference, one key per line:
// path, type, allowed values, bound, required-ness, default, description.
func Doc(b *Block, prefix string) string {
	var sb strings.Builder
	Walk(b, prefix, func(k Key) {
		f := k.Field
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
		if f.Bound != Unbounded {
			enum += " " + f.Bound.String()
		}
		when := ""
		if k.When != "" {
			when = " (" + k.When + ")"
		}
		fmt.Fprintf(&sb, "%-32s %s%s%s%s  %s%s\n", k.Path, f.Type, enum, req, def, f.Doc, when)
	})
	return sb.String()
}
