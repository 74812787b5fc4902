package feel

import (
	"sort"
	"strconv"
	"time"
)

func listFn(name string, fn func(e *env, l []any) any) {
	b := def(name, [][]string{sig("list")}, func(e *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		return fn(e, normList(l))
	})
	b.listArgs = true
}

func numbers(l []any) ([]Number, bool) {
	out := make([]Number, len(l))
	for i, x := range l {
		n, ok := x.(Number)
		if !ok {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

func defineLists() {
	def("list contains", [][]string{sig("list", "element")}, func(_ *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		for _, x := range l {
			if equal(norm(x), a[1]) == true {
				return true
			}
		}
		return false
	})
	def("count", [][]string{sig("list")}, func(_ *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		return NewNumber(int64(len(l)))
	}).listArgs = true
	extreme := func(want int) func(*env, []any) any {
		return func(_ *env, l []any) any {
			if len(l) == 0 {
				return nil
			}
			best := l[0]
			for _, x := range l[1:] {
				c, ok := compare(x, best)
				if !ok {
					return nil
				}
				if c == want {
					best = x
				}
			}
			if !orderable(best) || best == nil {
				return nil
			}
			return best
		}
	}
	listFn("min", extreme(-1))
	listFn("max", extreme(1))
	listFn("sum", func(_ *env, l []any) any {
		ns, ok := numbers(l)
		if !ok || len(ns) == 0 {
			return nil
		}
		return sumOf(ns)
	})
	listFn("product", func(_ *env, l []any) any {
		ns, ok := numbers(l)
		if !ok || len(ns) == 0 {
			return nil
		}
		p := NewNumber(1)
		for _, n := range ns {
			if p, ok = p.Mul(n); !ok {
				return nil
			}
		}
		return p
	})
	listFn("mean", func(_ *env, l []any) any {
		ns, ok := numbers(l)
		if !ok || len(ns) == 0 {
			return nil
		}
		s, ok := sumOf(ns).(Number)
		if !ok {
			return nil
		}
		m, _ := s.Quo(NewNumber(int64(len(ns))))
		return m
	})
	listFn("median", func(_ *env, l []any) any {
		ns, ok := numbers(l)
		if !ok || len(ns) == 0 {
			return nil
		}
		sort.Slice(ns, func(i, j int) bool { return ns[i].Cmp(ns[j]) < 0 })
		if len(ns)%2 == 1 {
			return ns[len(ns)/2]
		}
		s, _ := ns[len(ns)/2-1].Add(ns[len(ns)/2])
		m, _ := s.Quo(NewNumber(2))
		return m
	})
	listFn("stddev", func(_ *env, l []any) any {
		ns, ok := numbers(l)
		if !ok || len(ns) < 2 {
			return nil
		}
		s, ok := sumOf(ns).(Number)
		if !ok {
			return nil
		}
		mean, _ := s.Quo(NewNumber(int64(len(ns))))
		var sq Number
		for _, n := range ns {
			d, _ := n.Sub(mean)
			d2, _ := d.Mul(d)
			sq, _ = sq.Add(d2)
		}
		v, _ := sq.Quo(NewNumber(int64(len(ns) - 1)))
		return builtins["sqrt"].fn(nil, []any{v})
	})
	listFn("mode", func(_ *env, l []any) any {
		ns, ok := numbers(l)
		if !ok {
			return nil
		}
		sort.Slice(ns, func(i, j int) bool { return ns[i].Cmp(ns[j]) < 0 })
		best := 0
		var out []any
		for i := 0; i < len(ns); {
			j := i
			for j < len(ns) && ns[j].Cmp(ns[i]) == 0 {
				j++
			}
			switch {
			case j-i > best:
				best = j - i
				out = []any{ns[i]}
			case j-i == best:
				out = append(out, ns[i])
			}
			i = j
		}
		if out == nil {
			out = []any{}
		}
		return out
	})
	listFn("all", func(_ *env, l []any) any {
		res := any(true)
		for _, x := range l {
			switch x {
			case false:
				return false
			case true:
			default:
				res = nil
			}
		}
		return res
	})
	listFn("any", func(_ *env, l []any) any {
		res := any(false)
		for _, x := range l {
			switch x {
			case true:
				return true
			case false:
			default:
				res = nil
			}
		}
		return res
	})
	def("sublist", [][]string{sig("list", "start position"), sig("list", "start position", "length")}, func(_ *env, a []any) any {
		l, ok := list(a[0])
		st, ok2 := intArg(a[1])
		if !ok || !ok2 {
			return nil
		}
		n := int64(len(l))
		if st < 0 {
			st = n + st + 1
		}
		if st < 1 || st > n {
			return nil
		}
		end := n + 1
		if len(a) == 3 && a[2] != nil {
			ln, ok := intArg(a[2])
			if !ok || ln < 0 || st+ln > n+1 {
				return nil
			}
			end = st + ln
		}
		return append([]any(nil), l[st-1:end-1]...)
	})
	def("append", [][]string{sig("list", "item")}, func(e *env, a []any) any {
		if len(a) == 0 {
			return nil
		}
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		e.step(len(l) + len(a))
		out := append(make([]any, 0, len(l)+len(a)-1), l...)
		return append(out, a[1:]...)
	}).varargs = true
	def("concatenate", [][]string{sig("list")}, func(e *env, a []any) any {
		out := []any{}
		for _, x := range a {
			l, ok := list(x)
			if !ok {
				return nil
			}
			e.step(len(l))
			out = append(out, l...)
		}
		return out
	}).varargs = true
	def("insert before", [][]string{sig("list", "position", "newItem")}, func(e *env, a []any) any {
		l, ok := list(a[0])
		p, ok2 := intArg(a[1])
		if !ok || !ok2 {
			return nil
		}
		n := int64(len(l))
		if p < 0 {
			p = n + p + 1
		}
		if p < 1 || p > n {
			return nil
		}
		e.step(len(l))
		out := append(make([]any, 0, n+1), l[:p-1]...)
		out = append(out, a[2])
		return append(out, l[p-1:]...)
	})
	def("remove", [][]string{sig("list", "position")}, func(e *env, a []any) any {
		l, ok := list(a[0])
		p, ok2 := intArg(a[1])
		if !ok || !ok2 {
			return nil
		}
		n := int64(len(l))
		if p < 0 {
			p = n + p + 1
		}
		if p < 1 || p > n {
			return nil
		}
		e.step(len(l))
		out := append(make([]any, 0, n-1), l[:p-1]...)
		return append(out, l[p:]...)
	})
	def("reverse", [][]string{sig("list")}, func(_ *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		out := make([]any, len(l))
		for i, x := range l {
			out[len(l)-1-i] = x
		}
		return out
	})
	def("index of", [][]string{sig("list", "match")}, func(_ *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		out := []any{}
		for i, x := range l {
			if equal(norm(x), a[1]) == true {
				out = append(out, NewNumber(int64(i+1)))
			}
		}
		return out
	})
	def("union", [][]string{sig("list")}, func(e *env, a []any) any {
		var all []any
		for _, x := range a {
			l, ok := list(x)
			if !ok {
				return nil
			}
			all = append(all, l...)
		}
		return distinct(e, all)
	}).varargs = true
	def("distinct values", [][]string{sig("list")}, func(e *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		return distinct(e, l)
	})
	def("duplicate values", [][]string{sig("list")}, func(e *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		l = normList(l)
		out := []any{}
		for i, x := range l {
			e.step(i)
			seenBefore, inOut := false, false
			for _, y := range l[:i] {
				if equal(x, y) == true {
					seenBefore = true
					break
				}
			}
			for _, y := range out {
				if equal(x, y) == true {
					inOut = true
				}
			}
			if seenBefore && !inOut {
				out = append(out, x)
			}
		}
		return out
	})
	def("flatten", [][]string{sig("list")}, func(e *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		out := []any{}
		var walk func([]any, int)
		walk = func(l []any, depth int) {
			for _, x := range l {
				e.step(1)
				if sub, ok := x.([]any); ok && depth < MaxDepth {
					walk(sub, depth+1)
				} else {
					out = append(out, x)
				}
			}
		}
		walk(l, 0)
		return out
	})
	def("sort", [][]string{sig("list"), sig("list", "precedes")}, func(e *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		out := normList(l)
		if len(a) == 1 || a[1] == nil {
			bad := false
			sort.SliceStable(out, func(i, j int) bool {
				c, ok := compare(out[i], out[j])
				if !ok {
					bad = true
				}
				return c < 0
			})
			if bad {
				return nil
			}
			return out
		}
		fn, ok := a[1].(*Function)
		if !ok {
			return nil
		}
		bad := false
		sort.SliceStable(out, func(i, j int) bool {
			r := e.call(fn, []any{out[i], out[j]})
			b, ok := r.(bool)
			if !ok {
				bad = true
			}
			return b
		})
		if bad {
			return nil
		}
		return out
	})
	def("list replace", [][]string{sig("list", "position", "newItem")}, func(e *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		out := append([]any(nil), l...)
		if fn, ok := a[1].(*Function); ok {
			for i, x := range out {
				if e.call(fn, []any{norm(x), a[2]}) == true {
					out[i] = a[2]
				}
			}
			return out
		}
		p, ok := intArg(a[1])
		if !ok {
			return nil
		}
		n := int64(len(l))
		if p < 0 {
			p = n + p + 1
		}
		if p < 1 || p > n {
			return nil
		}
		out[p-1] = a[2]
		return out
	})
	def("partition", [][]string{sig("list", "size")}, func(e *env, a []any) any {
		l, ok := list(a[0])
		size, ok2 := intArg(a[1])
		if !ok || !ok2 || size < 1 {
			return nil
		}
		out := []any{}
		for i := 0; i < len(l); i += int(min(size, int64(len(l)))) {
			end := i + int(min(size, int64(len(l)-i)))
			e.step(1)
			out = append(out, append([]any(nil), l[i:end]...))
		}
		return out
	})
	def("is empty", [][]string{sig("list")}, func(_ *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		return len(l) == 0
	})
}

func sumOf(ns []Number) any {
	var s Number
	var ok bool
	for _, n := range ns {
		if s, ok = s.Add(n); !ok {
			return nil
		}
	}
	return s
}

func distinct(e *env, l []any) []any {
	out := []any{}
	for _, x := range l {
		x = norm(x)
		e.step(len(out) + 1)
		dup := false
		for _, y := range out {
			if equal(x, y) == true {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, x)
		}
	}
	return out
}

// ---- context ----

func defineContexts() {
	def("get value", [][]string{sig("m", "key")}, func(_ *env, a []any) any {
		if !isContext(a[0]) {
			return nil
		}
		if k, ok := a[1].(string); ok {
			v, _ := ctxGet(a[0], k)
			return v
		}
		keys, ok := list(a[1])
		if !ok {
			return nil
		}
		cur := a[0]
		for _, k := range keys {
			ks, ok := k.(string)
			if !ok || !isContext(cur) {
				return nil
			}
			cur, _ = ctxGet(cur, ks)
		}
		return cur
	})
	def("get entries", [][]string{sig("m")}, func(_ *env, a []any) any {
		if !isContext(a[0]) {
			return nil
		}
		out := []any{}
		for _, k := range ctxKeys(a[0]) {
			v, _ := ctxGet(a[0], k)
			out = append(out, &Context{keys: []string{"key", "value"}, vals: []any{k, v}})
		}
		return out
	})
	def("context put", [][]string{sig("context", "key", "value")}, func(_ *env, a []any) any {
		return putPath(a[0], a[1], a[2], 0)
	})
	def("context merge", [][]string{sig("contexts")}, func(_ *env, a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		out := &Context{}
		for _, x := range l {
			x = norm(x)
			if !isContext(x) {
				return nil
			}
			for _, k := range ctxKeys(x) {
				v, _ := ctxGet(x, k)
				out.Put(k, v)
			}
		}
		return out
	}).listArgs = true
}

func putPath(c any, key any, v any, depth int) any {
	if !isContext(c) || depth > MaxDepth {
		return nil
	}
	out := toContext(c).clone()
	switch k := key.(type) {
	case string:
		out.Put(k, v)
		return out
	case []any:
		if len(k) == 0 {
			return nil
		}
		first, ok := norm(k[0]).(string)
		if !ok {
			return nil
		}
		if len(k) == 1 {
			out.Put(first, v)
			return out
		}
		inner, _ := out.Get(first)
		if inner == nil {
			inner = &Context{}
		}
		r := putPath(inner, k[1:], v, depth+1)
		if r == nil {
			return nil
		}
		out.Put(first, r)
		return out
	}
	return nil
}

// ---- temporal ----

var monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

func defineTemporals() {
	dateFn := func(f func(t time.Time) any) func(*env, []any) any {
		return func(_ *env, a []any) any {
			d, ok := dateAt(a[0])
			if !ok {
				return nil
			}
			return f(d.utc())
		}
	}
	def("day of week", [][]string{sig("date")}, dateFn(func(t time.Time) any { return weekdays[t.Weekday()] }))
	def("day of year", [][]string{sig("date")}, dateFn(func(t time.Time) any { return NewNumber(int64(t.YearDay())) }))
	def("week of year", [][]string{sig("date")}, dateFn(func(t time.Time) any {
		_, w := t.ISOWeek()
		return NewNumber(int64(w))
	}))
	def("month of year", [][]string{sig("date")}, dateFn(func(t time.Time) any { return monthNames[t.Month()-1] }))
	def("today", [][]string{sig()}, func(e *env, _ []any) any {
		return dateOf(e.clock())
	})
	def("now", [][]string{sig()}, func(e *env, _ []any) any {
		return dateTimeFromTime(e.clock())
	})
	def("last day of month", [][]string{sig("date")}, func(_ *env, a []any) any {
		d, ok := dateAt(a[0])
		if !ok {
			return nil
		}
		return Date{d.year, d.month, daysIn(d.year, d.month)}
	})
	// cycle is Zeebe's timer function (a Camunda extension): the ISO 8601
	// repetition of an interval, forever or n times, as a timeCycle reads
	// it: cycle(duration("PT1H")) = "R/PT1H", cycle(3, duration("PT1H")) =
	// "R3/PT1H".
	def("cycle", [][]string{sig("interval"), sig("repetitions", "interval")}, func(_ *env, a []any) any {
		var iv string
		switch d := a[len(a)-1].(type) {
		case DaysTime:
			iv = d.String()
		case YearsMonths:
			iv = d.String()
		default:
			return nil
		}
		if len(a) == 1 {
			return "R/" + iv
		}
		n, ok := a[0].(Number)
		if !ok {
			return nil
		}
		i, ok := n.Int64()
		if !ok || i < 0 || n.String() != strconv.FormatInt(i, 10) {
			return nil
		}
		return "R" + strconv.FormatInt(i, 10) + "/" + iv
	})
}

// ---- ranges ----

func defineRanges() {
	def("range", [][]string{sig("from")}, func(e *env, a []any) any {
		s, ok := str(a[0])
		if !ok {
			return nil
		}
		x, err := Parse(s)
		if err != nil {
			return nil
		}
		if !literalRange(x.root) {
			return nil
		}
		r, ok := x.root.eval(e, nil).(*Range)
		if !ok {
			return nil
		}
		return r
	})
	// The interval relations of DMN 1.4 (after Allen), over points and ranges.
	rel := func(name string, params []string, f func(a, b *Range) any) {
		def(name, [][]string{params}, func(_ *env, a []any) any {
			x, ok1 := asRange(a[0])
			y, ok2 := asRange(a[1])
			if !ok1 || !ok2 {
				return nil
			}
			return f(x, y)
		})
	}
	lt := func(x, y any) any { return compareOp("<", x, y) }
	eq := func(x, y any) any { return equal(x, y) }
	and := func(vs ...any) any {
		res := any(true)
		for _, v := range vs {
			if v == false {
				return false
			}
			if v != true {
				res = nil
			}
		}
		return res
	}
	or := func(vs ...any) any {
		res := any(false)
		for _, v := range vs {
			if v == true {
				return true
			}
			if v != false {
				res = nil
			}
		}
		return res
	}
	ab := sig("range1", "range2")
	rel("before", ab, func(a, b *Range) any {
		return or(lt(a.End, b.Start), and(eq(a.End, b.Start), or(!a.EndClosed, !b.StartClosed)))
	})
	rel("after", ab, func(a, b *Range) any {
		return or(lt(b.End, a.Start), and(eq(b.End, a.Start), or(!b.EndClosed, !a.StartClosed)))
	})
	rel("meets", ab, func(a, b *Range) any { return and(a.EndClosed, b.StartClosed, eq(a.End, b.Start)) })
	rel("met by", ab, func(a, b *Range) any { return and(b.EndClosed, a.StartClosed, eq(b.End, a.Start)) })
	rel("overlaps", ab, func(a, b *Range) any {
		return and(
			or(lt(b.Start, a.End), and(eq(b.Start, a.End), a.EndClosed, b.StartClosed)),
			or(lt(a.Start, b.End), and(eq(a.Start, b.End), a.StartClosed, b.EndClosed)))
	})
	rel("overlaps before", ab, func(a, b *Range) any {
		return and(
			or(lt(a.Start, b.Start), and(eq(a.Start, b.Start), a.StartClosed, !b.StartClosed)),
			or(lt(b.Start, a.End), and(eq(b.Start, a.End), a.EndClosed, b.StartClosed)),
			or(lt(a.End, b.End), and(eq(a.End, b.End), or(!a.EndClosed, b.EndClosed))))
	})
	rel("overlaps after", ab, func(a, b *Range) any {
		return and(
			or(lt(b.Start, a.Start), and(eq(b.Start, a.Start), b.StartClosed, !a.StartClosed)),
			or(lt(a.Start, b.End), and(eq(a.Start, b.End), a.StartClosed, b.EndClosed)),
			or(lt(b.End, a.End), and(eq(b.End, a.End), or(!b.EndClosed, a.EndClosed))))
	})
	rel("finishes", ab, func(a, b *Range) any {
		return and(eq(a.EndClosed, b.EndClosed), eq(a.End, b.End),
			or(lt(b.Start, a.Start), and(eq(b.Start, a.Start), or(!a.StartClosed, b.StartClosed))))
	})
	rel("finished by", ab, func(a, b *Range) any {
		return and(eq(a.EndClosed, b.EndClosed), eq(a.End, b.End),
			or(lt(a.Start, b.Start), and(eq(a.Start, b.Start), or(a.StartClosed, !b.StartClosed))))
	})
	rel("includes", ab, func(a, b *Range) any {
		return and(
			or(lt(a.Start, b.Start), and(eq(a.Start, b.Start), or(a.StartClosed, !b.StartClosed))),
			or(lt(b.End, a.End), and(eq(b.End, a.End), or(a.EndClosed, !b.EndClosed))))
	})
	rel("during", ab, func(a, b *Range) any {
		return and(
			or(lt(b.Start, a.Start), and(eq(b.Start, a.Start), or(b.StartClosed, !a.StartClosed))),
			or(lt(a.End, b.End), and(eq(a.End, b.End), or(b.EndClosed, !a.EndClosed))))
	})
	rel("starts", ab, func(a, b *Range) any {
		return and(eq(a.StartClosed, b.StartClosed), eq(a.Start, b.Start),
			or(lt(a.End, b.End), and(eq(a.End, b.End), or(!a.EndClosed, b.EndClosed))))
	})
	rel("started by", ab, func(a, b *Range) any {
		return and(eq(a.StartClosed, b.StartClosed), eq(a.Start, b.Start),
			or(lt(b.End, a.End), and(eq(b.End, a.End), or(!b.EndClosed, a.EndClosed))))
	})
	rel("coincides", ab, func(a, b *Range) any {
		return and(eq(a.Start, b.Start), eq(a.End, b.End), eq(a.StartClosed, b.StartClosed), eq(a.EndClosed, b.EndClosed))
	})
}

// asRange treats a point as the degenerate range [p..p].
func asRange(v any) (*Range, bool) {
	switch x := v.(type) {
	case *Range:
		if x.Op != "" {
			return nil, false
		}
		return x, true
	case nil:
		return nil, false
	}
	if !orderable(v) {
		return nil, false
	}
	return &Range{Start: v, End: v, StartClosed: true, EndClosed: true}, true
}

// literalRange reports whether n is a range whose ends are literals (or
// temporal constructors of literals), which is all range() accepts.
func literalRange(n node) bool {
	lit := func(x node) bool {
		switch v := x.(type) {
		case *litNode:
			return true
		case *callNode:
			for _, a := range v.args {
				if _, ok := a.(*litNode); !ok {
					return false
				}
			}
			return v.bi != nil
		}
		return false
	}
	switch r := n.(type) {
	case *litNode:
		_, ok := r.v.(*Range)
		return ok
	case *rangeNode:
		return lit(r.lo) && lit(r.hi)
	case *cmpRangeNode:
		return lit(r.x)
	}
	return false
}
