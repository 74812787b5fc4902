package feel

import (
	"math"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"
)

// builtin is a function of FEEL's standard library.
type builtin struct {
	name string
	// sigs lists the accepted parameter lists; a call picks the one whose
	// length matches (positional) or which holds every given name (named;
	// parameters left out are null).
	sigs [][]string
	// listArgs: called with other than one positional argument, the
	// arguments are passed as one list (min(1, 2) = min([1, 2])); one
	// non-list argument becomes a singleton list.
	listArgs bool
	// varargs: any number of positional arguments are passed as they are.
	varargs bool
	fn      func(e *env, args []any) any
}

var builtins = map[string]*builtin{}

func def(name string, sigs [][]string, fn func(e *env, args []any) any) *builtin {
	b := &builtin{name: name, sigs: sigs, fn: fn}
	if builtins[name] != nil {
		panic("feel: builtin " + name + " defined twice")
	}
	builtins[name] = b
	return b
}

func sig(params ...string) []string { return params }

func (e *env) callBuiltinArgs(bi *builtin, args []any, names []string) any {
	if names != nil {
		var best []string
		for _, s := range bi.sigs {
			all := true
			for _, n := range names {
				if indexOf(s, n) < 0 {
					all = false
					break
				}
			}
			if all && (best == nil || len(s) < len(best)) {
				best = s
			}
		}
		if best == nil {
			return nil
		}
		ordered := make([]any, len(best))
		for i, n := range names {
			ordered[indexOf(best, n)] = args[i]
		}
		// Trailing optional parameters left out are absent, not null.
		n := len(best)
		for _, s := range bi.sigs {
			if len(s) < n && len(s) >= len(names) {
				prefix := true
				for i := range s {
					if s[i] != best[i] {
						prefix = false
					}
				}
				covered := true
				for _, nm := range names {
					if indexOf(s, nm) < 0 {
						covered = false
					}
				}
				if prefix && covered {
					n = len(s)
				}
			}
		}
		args = ordered[:n]
		if bi.listArgs {
			if l, ok := args[0].([]any); ok {
				return bi.fn(e, []any{l})
			}
			return bi.fn(e, []any{[]any{args[0]}})
		}
		return bi.fn(e, args)
	}
	if bi.listArgs {
		if len(args) == 1 {
			if _, ok := args[0].([]any); !ok {
				if args[0] == nil {
					return bi.fn(e, []any{nil})
				}
				return bi.fn(e, []any{[]any{args[0]}})
			}
			return bi.fn(e, args)
		}
		if len(args) == 0 {
			return nil
		}
		return bi.fn(e, []any{append([]any(nil), args...)})
	}
	if bi.varargs {
		return bi.fn(e, args)
	}
	for _, s := range bi.sigs {
		if len(s) == len(args) {
			return bi.fn(e, args)
		}
	}
	return nil
}

func num(v any) (Number, bool) {
	n, ok := v.(Number)
	return n, ok
}

func str(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok
}

func intArg(v any) (int64, bool) {
	n, ok := v.(Number)
	if !ok {
		return 0, false
	}
	return n.Int64()
}

func list(v any) ([]any, bool) {
	l, ok := v.([]any)
	return l, ok
}

func normList(l []any) []any {
	out := make([]any, len(l))
	for i, x := range l {
		out[i] = norm(x)
	}
	return out
}

func init() {
	// Built-in names join the static multi-word names once defined.
	defer func() {
		p := &parser{names: staticSet, prefixes: staticPrefixes}
		for n := range builtins {
			p.addName(n)
		}
	}()
	defineConversions()
	defineBooleans()
	defineStrings()
	defineNumbers()
	defineLists()
	defineContexts()
	defineTemporals()
	defineRanges()
}

// ---- boolean ----

func defineBooleans() {
	def("not", [][]string{sig("negand")}, func(_ *env, a []any) any {
		if b, ok := a[0].(bool); ok {
			return !b
		}
		return nil
	})
	def("is defined", [][]string{sig("value")}, func(_ *env, a []any) any { return a[0] != nil })
	def("get or else", [][]string{sig("value", "default")}, func(_ *env, a []any) any {
		if a[0] == nil {
			return a[1]
		}
		return a[0]
	})
	def("is", [][]string{sig("value1", "value2")}, func(_ *env, a []any) any { return identical(a[0], a[1]) })
}

// identical is is(): equal and of the same kind, zones included.
func identical(a, b any) bool {
	switch x := a.(type) {
	case Time:
		y, ok := b.(Time)
		return ok && x.ns == y.ns && sameZone(x.zone, y.zone)
	case DateTime:
		y, ok := b.(DateTime)
		return ok && x.wall.Equal(y.wall) && sameZone(x.zone, y.zone)
	}
	return equal(a, b) == true
}

func sameZone(a, b zone) bool {
	return a.kind == b.kind && a.off == b.off && a.name == b.name
}

// ---- conversion ----

func defineConversions() {
	def("date", [][]string{sig("from"), sig("year", "month", "day")}, func(_ *env, a []any) any {
		if len(a) == 1 {
			switch v := a[0].(type) {
			case string:
				d, n, ok := parseDate(v)
				if !ok || n != len(v) {
					return nil
				}
				return d
			case Date:
				return v
			case DateTime:
				return dateOf(v.wall)
			}
			return nil
		}
		y, ok1 := intArg(a[0])
		m, ok2 := intArg(a[1])
		d, ok3 := intArg(a[2])
		if !ok1 || !ok2 || !ok3 || y < -999999999 || y > 999999999 || m < 1 || m > 12 || d < 1 || d > 31 {
			return nil
		}
		dt, ok := NewDate(int(y), time.Month(m), int(d))
		if !ok {
			return nil
		}
		return dt
	})
	def("date and time", [][]string{sig("from"), sig("date", "time")}, func(_ *env, a []any) any {
		if len(a) == 1 {
			switch v := a[0].(type) {
			case string:
				dt, ok := parseDateTime(v)
				if !ok {
					return nil
				}
				return dt
			case DateTime:
				return v
			case Date:
				return DateTime{wall: v.utc()}
			}
			return nil
		}
		var d Date
		switch v := a[0].(type) {
		case Date:
			d = v
		case DateTime:
			d = dateOf(v.wall)
		default:
			return nil
		}
		t, ok := a[1].(Time)
		if !ok {
			return nil
		}
		return DateTime{wall: d.utc().Add(time.Duration(t.ns)), zone: t.zone}
	})
	def("time", [][]string{sig("from"), sig("hour", "minute", "second"), sig("hour", "minute", "second", "offset")}, func(_ *env, a []any) any {
		if len(a) == 1 {
			switch v := a[0].(type) {
			case string:
				t, ok := parseTime(v)
				if !ok {
					return nil
				}
				return t
			case Time:
				return v
			case DateTime:
				return Time{ns: clockNs(v.wall), zone: v.zone}
			case Date:
				return Time{zone: zone{kind: zoneOffset}}
			}
			return nil
		}
		h, ok1 := intArg(a[0])
		m, ok2 := intArg(a[1])
		s, ok3 := num(a[2])
		if !ok1 || !ok2 || !ok3 || h < 0 || h > 23 || m < 0 || m > 59 || s.Sign() < 0 || s.Cmp(NewNumber(60)) >= 0 {
			return nil
		}
		sd, ok := dtFromSeconds(s)
		if !ok {
			return nil
		}
		t := Time{ns: h*3600e9 + m*60e9 + sd.sec*1e9 + int64(sd.nsec)}
		if len(a) == 4 && a[3] != nil {
			off, ok := a[3].(DaysTime)
			if !ok || off.nsec != 0 || off.sec > 18*3600 || off.sec < -18*3600 {
				return nil
			}
			t.zone = zone{kind: zoneOffset, off: int32(off.sec)}
		}
		return t
	})
	def("duration", [][]string{sig("from")}, func(_ *env, a []any) any {
		s, ok := str(a[0])
		if !ok {
			return nil
		}
		d, ok := parseDuration(s)
		if !ok {
			return nil
		}
		return d
	})
	def("years and months duration", [][]string{sig("from", "to")}, func(_ *env, a []any) any {
		from, ok1 := dateAt(a[0])
		to, ok2 := dateAt(a[1])
		if !ok1 || !ok2 {
			return nil
		}
		months := (int64(to.year)*12 + int64(to.month)) - (int64(from.year)*12 + int64(from.month))
		days := to.day - from.day
		if months > 0 && days < 0 {
			months--
		} else if months < 0 && days > 0 {
			months++
		}
		return YearsMonths{months}
	})
	def("number", [][]string{sig("from"), sig("from", "grouping separator", "decimal separator")}, func(_ *env, a []any) any {
		s, ok := str(a[0])
		if !ok {
			return nil
		}
		if len(a) == 3 {
			g, d := a[1], a[2]
			gs, _ := g.(string)
			ds, _ := d.(string)
			if g != nil && gs != " " && gs != "," && gs != "." || d != nil && ds != "." && ds != "," || g != nil && gs == ds {
				return nil
			}
			if gs != "" {
				s = strings.ReplaceAll(s, gs, "")
			}
			if ds != "" && ds != "." {
				s = strings.ReplaceAll(s, ds, ".")
			}
		}
		n, err := ParseNumber(s)
		if err != nil {
			return nil
		}
		return n
	})
	def("string", [][]string{sig("from")}, func(_ *env, a []any) any {
		if a[0] == nil {
			return nil
		}
		s := toString(a[0])
		if len(s) > MaxString {
			return nil
		}
		return s
	})
	def("context", [][]string{sig("entries")}, func(_ *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			if a[0] == nil {
				return nil
			}
			l = []any{a[0]}
		}
		c := &Context{}
		for _, el := range l {
			k, ok1 := ctxGet(norm(el), "key")
			v, ok2 := ctxGet(norm(el), "value")
			ks, ok3 := k.(string)
			if !ok1 || !ok2 || !ok3 {
				return nil
			}
			if _, dup := c.Get(ks); dup {
				return nil
			}
			c.Put(ks, v)
		}
		return c
	})
}

func dateAt(v any) (Date, bool) {
	switch x := v.(type) {
	case Date:
		return x, true
	case DateTime:
		return dateOf(x.wall), true
	}
	return Date{}, false
}

// toString is string(): FEEL's text form of any value.
func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case interface{ String() string }:
		return x.String()
	case []any:
		var b strings.Builder
		b.WriteByte('[')
		for i, el := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quoted(norm(el)))
		}
		b.WriteByte(']')
		return b.String()
	case *Context, map[string]any:
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range ctxKeys(x) {
			if i > 0 {
				b.WriteString(", ")
			}
			v, _ := ctxGet(x, k)
			b.WriteString(k)
			b.WriteString(": ")
			b.WriteString(quoted(v))
		}
		b.WriteByte('}')
		return b.String()
	}
	return ""
}

func quoted(v any) string {
	if s, ok := v.(string); ok {
		return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
	}
	return toString(v)
}

// String returns the range as FEEL writes it: [1..10), < 5.
func (r *Range) String() string {
	if r.Op != "" {
		v := r.End
		if r.Op == ">" || r.Op == ">=" || r.Op == "=" || r.Op == "!=" {
			v = r.Start
		}
		return r.Op + " " + quoted(v)
	}
	open, end := "(", ")"
	if r.StartClosed {
		open = "["
	}
	if r.EndClosed {
		end = "]"
	}
	return open + quoted(r.Start) + ".." + quoted(r.End) + end
}

// ---- string ----

func defineStrings() {
	def("substring", [][]string{sig("string", "start position"), sig("string", "start position", "length")}, func(_ *env, a []any) any {
		s, ok1 := str(a[0])
		st, ok2 := num(a[1])
		if !ok1 || !ok2 {
			return nil
		}
		rs := []rune(s)
		start, ok := st.Floor().Int64()
		if !ok {
			return nil
		}
		if start < 0 {
			start = int64(len(rs)) + start + 1
		}
		if start < 1 || start > int64(len(rs))+1 {
			if start < 1 && start <= 0 {
				return nil
			}
			return ""
		}
		end := int64(len(rs)) + 1
		if len(a) == 3 && a[2] != nil {
			ln, ok := num(a[2])
			if !ok {
				return nil
			}
			l, ok := ln.Floor().Int64()
			if !ok || l < 0 {
				return nil
			}
			if start+l < end {
				end = start + l
			}
		}
		return string(rs[start-1 : end-1])
	})
	def("string length", [][]string{sig("string")}, func(_ *env, a []any) any {
		s, ok := str(a[0])
		if !ok {
			return nil
		}
		return NewNumber(int64(utf8.RuneCountInString(s)))
	})
	// ß has no one-letter capital: Java (and so every JVM FEEL) writes SS.
	def("upper case", [][]string{sig("string")}, strFn(func(s string) string {
		return strings.ReplaceAll(strings.ToUpper(s), "ß", "SS")
	}))
	def("lower case", [][]string{sig("string")}, strFn(strings.ToLower))
	def("substring before", [][]string{sig("string", "match")}, str2(func(s, m string) any {
		i := strings.Index(s, m)
		if i < 0 {
			return ""
		}
		return s[:i]
	}))
	def("substring after", [][]string{sig("string", "match")}, str2(func(s, m string) any {
		i := strings.Index(s, m)
		if i < 0 {
			return ""
		}
		return s[i+len(m):]
	}))
	def("contains", [][]string{sig("string", "match")}, str2(func(s, m string) any { return strings.Contains(s, m) }))
	def("starts with", [][]string{sig("string", "match")}, str2(func(s, m string) any { return strings.HasPrefix(s, m) }))
	def("ends with", [][]string{sig("string", "match")}, str2(func(s, m string) any { return strings.HasSuffix(s, m) }))
	def("matches", [][]string{sig("input", "pattern"), sig("input", "pattern", "flags")}, func(_ *env, a []any) any {
		s, ok1 := str(a[0])
		p, ok2 := str(a[1])
		if !ok1 || !ok2 {
			return nil
		}
		re, ok := compileXSD(p, flagArg(a, 2))
		if !ok {
			return nil
		}
		return re.MatchString(s)
	})
	def("replace", [][]string{sig("input", "pattern", "replacement"), sig("input", "pattern", "replacement", "flags")}, func(_ *env, a []any) any {
		s, ok1 := str(a[0])
		p, ok2 := str(a[1])
		r, ok3 := str(a[2])
		if !ok1 || !ok2 || !ok3 {
			return nil
		}
		re, ok := compileXSD(p, flagArg(a, 3))
		if !ok {
			return nil
		}
		if re.MatchString("") {
			return nil // XPath: a pattern that matches "" is an error
		}
		if n := len(re.FindAllStringIndex(s, -1)); len(s)+n*len(r)*2 > MaxString {
			return nil
		}
		return re.ReplaceAllString(s, xpathReplacement(r))
	})
	def("trim", [][]string{sig("string")}, strFn(strings.TrimSpace))
	def("is blank", [][]string{sig("string")}, func(_ *env, a []any) any {
		s, ok := str(a[0])
		if !ok {
			return nil
		}
		return strings.TrimSpace(s) == ""
	})
	def("extract", [][]string{sig("string", "pattern")}, func(_ *env, a []any) any {
		s, ok1 := str(a[0])
		p, ok2 := str(a[1])
		if !ok1 || !ok2 {
			return nil
		}
		re, ok := compileXSD(p, "")
		if !ok {
			return nil
		}
		out := []any{}
		for _, m := range re.FindAllString(s, -1) {
			out = append(out, m)
		}
		return out
	})
	def("split", [][]string{sig("string", "delimiter")}, func(_ *env, a []any) any {
		s, ok1 := str(a[0])
		d, ok2 := str(a[1])
		if !ok1 || !ok2 {
			return nil
		}
		re, ok := compileXSD(d, "")
		if !ok || re.MatchString("") {
			return nil
		}
		parts := re.Split(s, -1)
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out
	})
	def("string join", [][]string{sig("list"), sig("list", "delimiter")}, func(_ *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			if s, isStr := a[0].(string); isStr {
				l = []any{s}
			} else {
				return nil
			}
		}
		sep := ""
		if len(a) == 2 && a[1] != nil {
			var ok bool
			if sep, ok = str(a[1]); !ok {
				return nil
			}
		}
		var b strings.Builder
		first := true
		for _, el := range l {
			if el == nil {
				continue
			}
			s, ok := el.(string)
			if !ok || b.Len()+len(sep)+len(s) > MaxString {
				return nil
			}
			if !first {
				b.WriteString(sep)
			}
			first = false
			b.WriteString(s)
		}
		return b.String()
	})
}

func flagArg(a []any, i int) string {
	if len(a) > i {
		if s, ok := a[i].(string); ok {
			return s
		}
	}
	return ""
}

func strFn(f func(string) string) func(*env, []any) any {
	return func(_ *env, a []any) any {
		s, ok := str(a[0])
		if !ok {
			return nil
		}
		return f(s)
	}
}

func str2(f func(s, m string) any) func(*env, []any) any {
	return func(_ *env, a []any) any {
		s, ok1 := str(a[0])
		m, ok2 := str(a[1])
		if !ok1 || !ok2 {
			return nil
		}
		return f(s, m)
	}
}

// ---- number ----

func defineNumbers() {
	scale := func(v any) (int64, bool) {
		s, ok := intArg(v)
		if !ok || s < -6111 || s > 6176 {
			return 0, false
		}
		return s, true
	}
	rounder := func(mode roundMode) func(*env, []any) any {
		return func(_ *env, a []any) any {
			n, ok := num(a[0])
			if !ok {
				return nil
			}
			s := int64(0)
			if len(a) == 2 && a[1] != nil {
				if s, ok = scale(a[1]); !ok {
					return nil
				}
			}
			r, ok := n.round(s, mode)
			if !ok {
				return nil
			}
			return r
		}
	}
	def("decimal", [][]string{sig("n", "scale")}, rounder(halfEven))
	def("floor", [][]string{sig("n"), sig("n", "scale")}, rounder(floorMode))
	def("ceiling", [][]string{sig("n"), sig("n", "scale")}, rounder(ceilingMode))
	def("round up", [][]string{sig("n", "scale")}, rounder(up))
	def("round down", [][]string{sig("n", "scale")}, rounder(down))
	def("round half up", [][]string{sig("n", "scale")}, rounder(halfUp))
	def("round half down", [][]string{sig("n", "scale")}, rounder(halfDown))
	def("abs", [][]string{sig("n")}, func(_ *env, a []any) any {
		switch v := a[0].(type) {
		case Number:
			return v.Abs()
		case DaysTime:
			if v.sign() < 0 {
				return v.neg()
			}
			return v
		case YearsMonths:
			if v.months < 0 {
				return YearsMonths{-v.months}
			}
			return v
		}
		return nil
	})
	def("modulo", [][]string{sig("dividend", "divisor")}, func(_ *env, a []any) any {
		x, ok1 := num(a[0])
		y, ok2 := num(a[1])
		if !ok1 || !ok2 || y.Sign() == 0 {
			return nil
		}
		q, ok := x.Quo(y)
		if !ok {
			return nil
		}
		p, ok := y.Mul(q.Floor())
		if !ok {
			return nil
		}
		r, ok := x.Sub(p)
		if !ok {
			return nil
		}
		return r
	})
	def("sqrt", [][]string{sig("number")}, func(_ *env, a []any) any {
		n, ok := num(a[0])
		if !ok || n.Sign() < 0 {
			return nil
		}
		f, _, err := big.ParseFloat(n.sci(), 10, 200, big.ToNearestEven)
		if err != nil {
			return nil
		}
		f.Sqrt(f)
		r, err := ParseNumber(f.Text('e', Precision+2))
		if err != nil {
			return nil
		}
		r, _ = r.Add(Number{})
		return r
	})
	def("log", [][]string{sig("number")}, floatFn(func(f float64) float64 {
		if f <= 0 {
			return math.NaN()
		}
		return math.Log(f)
	}))
	def("exp", [][]string{sig("number")}, floatFn(math.Exp))
	def("odd", [][]string{sig("number")}, func(_ *env, a []any) any {
		n, ok := num(a[0])
		if !ok || !n.IsInt() {
			return nil
		}
		return n.truncBig().Bit(0) == 1
	})
	def("even", [][]string{sig("number")}, func(_ *env, a []any) any {
		n, ok := num(a[0])
		if !ok || !n.IsInt() {
			return nil
		}
		return n.truncBig().Bit(0) == 0
	})
}

func floatFn(f func(float64) float64) func(*env, []any) any {
	return func(_ *env, a []any) any {
		n, ok := num(a[0])
		if !ok {
			return nil
		}
		r, ok := NumberFromFloat(f(n.Float64()))
		if !ok {
			return nil
		}
		return r
	}
}
