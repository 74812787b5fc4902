package dmn

import (
	"strings"

	"github.com/sextant-dev/sextant/navigators/feel"
)

type kind uint8

const (
	kAny kind = iota
	kNumber
	kString
	kBool
	kDate
	kTime
	kDateTime
	kDaysTime
	kYearsMonths
	kDuration // either kind of duration
	kContext
	kList
	kFunction
	kRange
)

// typ is a type a value is checked against: a built-in FEEL type, or an
// item definition (a base type narrowed by allowed values, a structure of
// components, a collection of either).
type typ struct {
	name    string
	kind    kind
	elem    *typ // element type of a list or collection
	fields  []field
	allowed *feel.UnaryTests // allowed values, checked on a (non-list) value
	// listAllowed is a type constraint on the collection as a whole.
	listAllowed *feel.UnaryTests
	// base is the item definition this one narrows, checked first.
	base *typ
}

type field struct {
	name string
	t    *typ
}

var builtinTypes = map[string]kind{
	"Any": kAny, "any": kAny,
	"number": kNumber, "string": kString, "boolean": kBool,
	"date": kDate, "time": kTime, "dateTime": kDateTime, "date and time": kDateTime,
	"dayTimeDuration": kDaysTime, "days and time duration": kDaysTime,
	"yearMonthDuration": kYearsMonths, "years and months duration": kYearsMonths,
	"duration": kDuration, "context": kContext, "list": kList, "function": kFunction,
	"range": kRange,
}

// isCollection reports whether values of t are lists.
func (t *typ) isCollection() bool { return t != nil && t.kind == kList }

// conforms reports whether v (a FEEL value) is of type t. Null conforms to
// every type. s evaluates allowed values.
func conforms(s *feel.Session, v any, t *typ) bool {
	v = feel.Value(v)
	if v == nil || t == nil {
		return true
	}
	if t.base != nil {
		return conforms(s, v, t.base) && t.allows(s, v)
	}
	switch t.kind {
	case kAny:
		return true
	case kNumber:
		_, ok := v.(feel.Number)
		return ok && t.allows(s, v)
	case kString:
		_, ok := v.(string)
		return ok && t.allows(s, v)
	case kBool:
		_, ok := v.(bool)
		return ok && t.allows(s, v)
	case kDate:
		_, ok := v.(feel.Date)
		return ok && t.allows(s, v)
	case kTime:
		_, ok := v.(feel.Time)
		return ok && t.allows(s, v)
	case kDateTime:
		_, ok := v.(feel.DateTime)
		return ok && t.allows(s, v)
	case kDaysTime:
		_, ok := v.(feel.DaysTime)
		return ok && t.allows(s, v)
	case kYearsMonths:
		_, ok := v.(feel.YearsMonths)
		return ok && t.allows(s, v)
	case kDuration:
		switch v.(type) {
		case feel.DaysTime, feel.YearsMonths:
			return t.allows(s, v)
		}
		return false
	case kFunction:
		_, ok := v.(*feel.Function)
		return ok
	case kRange:
		_, ok := v.(*feel.Range)
		return ok
	case kContext:
		if !isContext(v) {
			return false
		}
		for _, f := range t.fields {
			fv, _ := ctxGet(v, f.name)
			if !conforms(s, fv, f.t) {
				return false
			}
		}
		return t.allows(s, v)
	case kList:
		l, ok := v.([]any)
		if !ok {
			return false
		}
		if t.elem != nil {
			for _, el := range l {
				if !conforms(s, el, t.elem) {
					return false
				}
			}
		}
		if t.listAllowed != nil {
			if r, err := s.Match(t.listAllowed, v, nil); err != nil || r != true {
				return false
			}
		}
		return true
	}
	return false
}

func (t *typ) allows(s *feel.Session, v any) bool {
	if t.allowed == nil {
		return true
	}
	r, err := s.Match(t.allowed, v, nil)
	return err == nil && r == true
}

// coerce applies DMN's conversions for a value given a declared type: a
// singleton list becomes its element where a single value is expected, a
// single value a singleton list where a collection is. It reports whether
// the result conforms.
func coerce(s *feel.Session, v any, t *typ) (any, bool) {
	if t == nil || t.kind == kAny {
		return v, true
	}
	v = feel.Value(v)
	if conforms(s, v, t) {
		return v, true
	}
	if l, ok := v.([]any); ok && !t.isCollection() && len(l) == 1 && conforms(s, l[0], t) {
		return feel.Value(l[0]), true
	}
	if _, ok := v.([]any); !ok && t.isCollection() && t.elem != nil && conforms(s, v, t.elem) {
		return []any{v}, true
	}
	return nil, false
}

func isContext(v any) bool {
	switch v.(type) {
	case *feel.Context, map[string]any:
		return true
	}
	return false
}

func ctxGet(v any, k string) (any, bool) {
	switch c := v.(type) {
	case *feel.Context:
		return c.Get(k)
	case map[string]any:
		x, ok := c[k]
		return x, ok
	}
	return nil, false
}

// Conversions of strings (as JSON carries them) into temporal values.
var (
	toDate     = feel.MustParse("date(s)")
	toTime     = feel.MustParse("time(s)")
	toDateTime = feel.MustParse("date and time(s)")
	toDuration = feel.MustParse("duration(s)")
)

// fromJSON converts the strings of an input that its declared type says
// are dates, times or durations (JSON has no such values) into them, and
// normalizes the rest into FEEL values; it recurses into contexts and
// lists by the type's structure. A string that does not parse is left as
// it is, for the type check to refuse.
func fromJSON(s *feel.Session, v any, t *typ) any {
	v = feel.Value(v)
	if t == nil || v == nil {
		return v
	}
	switch x := v.(type) {
	case string:
		var conv *feel.Expr
		switch t.kind {
		case kDate:
			conv = toDate
		case kTime:
			conv = toTime
		case kDateTime:
			conv = toDateTime
		case kDaysTime, kYearsMonths, kDuration:
			conv = toDuration
		}
		if conv == nil {
			return v
		}
		r, err := s.Eval(conv, feel.Vars{"s": x})
		if err != nil || r == nil {
			return v
		}
		return r
	case []any:
		et := t.elem
		if !t.isCollection() {
			et = t
		}
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = fromJSON(s, el, et)
		}
		return out
	case map[string]any, *feel.Context:
		if t.kind != kContext {
			return v
		}
		keys := ctxKeys(x)
		c := feel.NewContext()
		for _, k := range keys {
			el, _ := ctxGet(x, k)
			c.Put(k, fromJSON(s, el, t.field(k)))
		}
		return c
	}
	return v
}

func (t *typ) field(name string) *typ {
	for _, f := range t.fields {
		if f.name == name {
			return f.t
		}
	}
	return nil
}

func ctxKeys(v any) []string {
	switch c := v.(type) {
	case *feel.Context:
		return c.Keys()
	case map[string]any:
		ks := make([]string, 0, len(c))
		for k := range c {
			ks = append(ks, k)
		}
		sortStrings(ks)
		return ks
	}
	return nil
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// parseTypeName reads a type reference: a built-in name, an item
// definition, `list<T>` or `context<k: T, …>`, with an optional QName
// prefix (`feel:number`, DMN 1.1) dropped. lookup resolves item
// definitions; ok is false for a name that is none of these.
func parseTypeName(ref string, lookup func(string) *typ) (*typ, bool) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, true
	}
	if t := lookup(ref); t != nil {
		return t, true
	}
	if i := strings.IndexByte(ref, ':'); i > 0 && !strings.ContainsAny(ref[:i], "<>, ") {
		if t := lookup(ref[i+1:]); t != nil {
			return t, true
		}
		if k, ok := builtinTypes[ref[i+1:]]; ok {
			return &typ{name: ref[i+1:], kind: k}, true
		}
	}
	if k, ok := builtinTypes[ref]; ok {
		return &typ{name: ref, kind: k}, true
	}
	if inner, ok := strings.CutPrefix(ref, "list<"); ok && strings.HasSuffix(inner, ">") {
		et, ok := parseTypeName(strings.TrimSuffix(inner, ">"), lookup)
		if !ok {
			return nil, false
		}
		return &typ{name: ref, kind: kList, elem: et}, true
	}
	if inner, ok := strings.CutPrefix(ref, "context<"); ok && strings.HasSuffix(inner, ">") {
		t := &typ{name: ref, kind: kContext}
		for _, part := range splitTop(strings.TrimSuffix(inner, ">")) {
			k, v, ok := strings.Cut(part, ":")
			if !ok {
				return nil, false
			}
			ft, ok := parseTypeName(v, lookup)
			if !ok {
				return nil, false
			}
			t.fields = append(t.fields, field{strings.TrimSpace(k), ft})
		}
		return t, true
	}
	if strings.HasPrefix(ref, "function<") || strings.HasPrefix(ref, "range<") {
		k := kFunction
		if strings.HasPrefix(ref, "range<") {
			k = kRange
		}
		return &typ{name: ref, kind: k}, true
	}
	return nil, false
}

// splitTop splits s at commas outside angle brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '<':
			depth++
		case '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if strings.TrimSpace(s[start:]) != "" {
		out = append(out, s[start:])
	}
	return out
}
