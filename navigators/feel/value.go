package feel

import (
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"time"
)

// Context is a FEEL context: string keys in the order they were written.
//
// # Notes
//
// Eval accepts map[string]any wherever a context is expected and reads it
// in place; contexts Eval builds are *Context so that their order (and
// their JSON) is stable.
type Context struct {
	keys []string
	vals []any
	idx  map[string]int // built once a context grows past a few keys
}

// NewContext returns an empty context.
func NewContext() *Context { return &Context{} }

// Len returns the number of entries.
func (c *Context) Len() int { return len(c.keys) }

// Keys returns the keys in order. The slice must not be modified.
func (c *Context) Keys() []string { return c.keys }

// Get returns the value of key.
func (c *Context) Get(key string) (any, bool) {
	if c.idx != nil {
		i, ok := c.idx[key]
		if !ok {
			return nil, false
		}
		return c.vals[i], true
	}
	for i, k := range c.keys {
		if k == key {
			return c.vals[i], true
		}
	}
	return nil, false
}

// Put sets key to v, keeping the position of an existing key.
func (c *Context) Put(key string, v any) {
	if c.idx != nil {
		if i, ok := c.idx[key]; ok {
			c.vals[i] = v
			return
		}
	} else {
		for i, k := range c.keys {
			if k == key {
				c.vals[i] = v
				return
			}
		}
	}
	c.keys = append(c.keys, key)
	c.vals = append(c.vals, v)
	if c.idx != nil {
		c.idx[key] = len(c.keys) - 1
	} else if len(c.keys) > 8 {
		c.idx = make(map[string]int, len(c.keys))
		for i, k := range c.keys {
			c.idx[k] = i
		}
	}
}

// Map returns the entries as a Go map.
func (c *Context) Map() map[string]any {
	m := make(map[string]any, len(c.keys))
	for i, k := range c.keys {
		m[k] = c.vals[i]
	}
	return m
}

func (c *Context) clone() *Context {
	n := &Context{keys: append([]string(nil), c.keys...), vals: append([]any(nil), c.vals...)}
	if c.idx != nil {
		n.idx = make(map[string]int, len(c.idx))
		for k, v := range c.idx {
			n.idx[k] = v
		}
	}
	return n
}

// Range is a FEEL range: an interval [Start..End] with open or closed
// ends, or a comparison such as `< 10` (then Op is "<", "<=", ">", ">=",
// "=" or "!=" and only the bound on that side is set).
type Range struct {
	Start, End             any
	StartClosed, EndClosed bool
	Op                     string
}

// Function is a FEEL function value: a built-in or one defined in an
// expression with `function(x) …`.
type Function struct {
	name    string
	params  []string
	types   []*ftype
	body    node
	closure *frame
	bi      *builtin
}

// String names the function.
func (f *Function) String() string {
	if f.bi != nil {
		return "function " + f.bi.name
	}
	return "function(" + joinNames(f.params) + ")"
}

func joinNames(ns []string) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// norm converts a Go value into the FEEL value it stands for: integers and
// floats become Numbers, time.Time a date and time, time.Duration a days
// and time duration, other slices and maps lists and contexts.
func norm(v any) any {
	switch x := v.(type) {
	case nil, bool, string, Number, *Context, []any, map[string]any, Date, Time, DateTime,
		DaysTime, YearsMonths, *Range, *Function:
		return v
	case int:
		return boxInt(int64(x))
	case int64:
		return boxInt(x)
	case int32:
		return Number{c: int64(x)}
	case int16:
		return Number{c: int64(x)}
	case int8:
		return Number{c: int64(x)}
	case uint:
		return fromUint(uint64(x))
	case uint64:
		return fromUint(x)
	case uint32:
		return Number{c: int64(x)}
	case uint16:
		return Number{c: int64(x)}
	case uint8:
		return Number{c: int64(x)}
	case float64:
		n, ok := NumberFromFloat(x)
		if !ok {
			return nil
		}
		return n
	case float32:
		n, ok := NumberFromFloat(float64(x))
		if !ok {
			return nil
		}
		return n
	case json.Number:
		n, err := ParseNumber(string(x))
		if err != nil {
			return nil
		}
		return n
	case *Number:
		if x == nil {
			return nil
		}
		return *x
	case time.Time:
		return dateTimeFromTime(x)
	case time.Duration:
		return DaysTime{sec: int64(x / time.Second), nsec: int32(x % time.Second)}
	case []string:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = s
		}
		return l
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
		return m
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil
		}
		l := make([]any, rv.Len())
		for i := range l {
			l[i] = rv.Index(i).Interface()
		}
		return l
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String || rv.IsNil() {
			return nil
		}
		m := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			m[it.Key().String()] = it.Value().Interface()
		}
		return m
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return norm(rv.Elem().Interface())
	case reflect.Bool:
		return rv.Bool()
	case reflect.String:
		return rv.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return Number{c: rv.Int()}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fromUint(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return norm(rv.Float())
	}
	return nil
}

// smallNums holds small integers already boxed, so that reading a
// counter or an amount from the variables allocates nothing.
var smallNums = func() (a [1280]any) {
	for i := range a {
		a[i] = Number{c: int64(i) - 256}
	}
	return a
}()

func boxInt(i int64) any {
	if i >= -256 && i < 1024 {
		return smallNums[i+256]
	}
	return Number{c: i}
}

func fromUint(u uint64) Number {
	if u <= math.MaxInt64 {
		return Number{c: int64(u)}
	}
	n, _ := ParseNumber(uitoa(u))
	return n
}

func uitoa(u uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	return string(b[i:])
}

// isContext reports whether v is a context (*Context or map[string]any).
func isContext(v any) bool {
	switch v.(type) {
	case *Context, map[string]any:
		return true
	}
	return false
}

// ctxGet reads key from a context value.
func ctxGet(v any, key string) (any, bool) {
	switch c := v.(type) {
	case *Context:
		x, ok := c.Get(key)
		return x, ok
	case map[string]any:
		x, ok := c[key]
		return norm(x), ok
	}
	return nil, false
}

// ctxKeys lists a context's keys: written order, or sorted for Go maps.
func ctxKeys(v any) []string {
	switch c := v.(type) {
	case *Context:
		return c.keys
	case map[string]any:
		ks := make([]string, 0, len(c))
		for k := range c {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	return nil
}

// toContext returns v as a *Context (copying a Go map, keys sorted).
func toContext(v any) *Context {
	switch c := v.(type) {
	case *Context:
		return c
	case map[string]any:
		out := &Context{}
		for _, k := range ctxKeys(c) {
			out.Put(k, norm(c[k]))
		}
		return out
	}
	return nil
}

// asList returns v as a list: lists as they are, anything else as a
// singleton (FEEL's implicit conversion), null as nil.
func asList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	return []any{v}, false
}
