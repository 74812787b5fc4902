package feel

import (
	"math"
	"strings"
	"time"
)

// arith applies + - * / ** (op '^') with FEEL's typing; null when the
// operands do not fit the operator.
func arith(op byte, l, r any) any {
	if l == nil || r == nil {
		return nil
	}
	switch a := l.(type) {
	case Number:
		switch b := r.(type) {
		case Number:
			return numArith(op, a, b)
		case DaysTime:
			if op == '*' {
				return scaleDT(b, a, false)
			}
		case YearsMonths:
			if op == '*' {
				return scaleYM(b, a, false)
			}
		}
	case string:
		if b, ok := r.(string); ok && op == '+' {
			if len(a)+len(b) > MaxString {
				return nil
			}
			return a + b
		}
	case DaysTime:
		switch b := r.(type) {
		case DaysTime:
			switch op {
			case '+':
				return addDT(a, b)
			case '-':
				return addDT(a, b.neg())
			case '/':
				q, ok := a.seconds().Quo(b.seconds())
				if !ok {
					return nil
				}
				return q
			}
		case Number:
			switch op {
			case '*':
				return scaleDT(a, b, false)
			case '/':
				return scaleDT(a, b, true)
			}
		case DateTime, Date, Time:
			if op == '+' {
				return arith('+', r, l)
			}
		}
	case YearsMonths:
		switch b := r.(type) {
		case YearsMonths:
			switch op {
			case '+':
				return YearsMonths{a.months + b.months}
			case '-':
				return YearsMonths{a.months - b.months}
			case '/':
				if b.months == 0 {
					return nil
				}
				q, _ := NewNumber(a.months).Quo(NewNumber(b.months))
				return q
			}
		case Number:
			switch op {
			case '*':
				return scaleYM(a, b, false)
			case '/':
				return scaleYM(a, b, true)
			}
		case DateTime, Date:
			if op == '+' {
				return arith('+', r, l)
			}
		}
	case DateTime:
		switch b := r.(type) {
		case YearsMonths:
			switch op {
			case '+':
				return addMonthsDT(a, b.months)
			case '-':
				return addMonthsDT(a, -b.months)
			}
		case DaysTime:
			switch op {
			case '+':
				return addDurDT(a, b)
			case '-':
				return addDurDT(a, b.neg())
			}
		case DateTime:
			if op == '-' {
				return between(b.Time(), a.Time())
			}
		case Date:
			if op == '-' {
				return between(b.utc(), a.Time())
			}
		}
	case Date:
		switch b := r.(type) {
		case YearsMonths:
			m := b.months
			if op == '-' {
				m = -m
			} else if op != '+' {
				return nil
			}
			y, mo, d, ok := addMonths(a.year, a.month, a.day, m)
			if !ok {
				return nil
			}
			return Date{y, mo, d}
		case DaysTime:
			if op == '-' {
				b = b.neg()
			} else if op != '+' {
				return nil
			}
			t := a.utc().Add(time.Duration(b.sec) * time.Second).Add(time.Duration(b.nsec))
			return dateOf(t)
		case Date:
			if op == '-' {
				return between(b.utc(), a.utc())
			}
		case DateTime:
			if op == '-' {
				return between(b.Time(), a.utc())
			}
		}
	case Time:
		switch b := r.(type) {
		case DaysTime:
			if op == '-' {
				b = b.neg()
			} else if op != '+' {
				return nil
			}
			day := int64(86400e9)
			d := (b.sec%86400)*1e9 + int64(b.nsec)
			ns := ((a.ns+d)%day + day) % day
			return Time{ns: ns, zone: a.zone}
		case Time:
			if op == '-' {
				x, y := a.ns, b.ns
				if a.zone.kind != zoneNone || b.zone.kind != zoneNone {
					ref := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
					x -= int64(a.zone.offsetAt(ref)) * 1e9
					y -= int64(b.zone.offsetAt(ref)) * 1e9
				}
				return dtFromNs(0, x-y)
			}
		}
	}
	return nil
}

func numArith(op byte, a, b Number) any {
	var r Number
	var ok bool
	switch op {
	case '+':
		r, ok = a.Add(b)
	case '-':
		r, ok = a.Sub(b)
	case '*':
		r, ok = a.Mul(b)
	case '/':
		r, ok = a.Quo(b)
	case '^':
		if k, isInt := b.Int64(); isInt && k > -1e9 && k < 1e9 {
			r, ok = a.powInt(k)
		} else {
			f := math.Pow(a.Float64(), b.Float64())
			r, ok = NumberFromFloat(f)
		}
	}
	if !ok {
		return nil
	}
	return r
}

func between(from, to time.Time) any {
	d := to.Sub(from)
	if d == math.MaxInt64 || d == math.MinInt64 {
		// Beyond ±292 years time.Duration saturates: count whole seconds.
		s := to.Unix() - from.Unix()
		return dtFromNs(s, int64(to.Nanosecond()-from.Nanosecond()))
	}
	return NewDaysTime(d)
}

func addDT(a, b DaysTime) any {
	s := a.sec + b.sec
	if (a.sec > 0 && b.sec > 0 && s < 0) || (a.sec < 0 && b.sec < 0 && s > 0) {
		return nil
	}
	return dtFromNs(s, int64(a.nsec)+int64(b.nsec))
}

func scaleDT(d DaysTime, n Number, div bool) any {
	var r Number
	var ok bool
	if div {
		r, ok = d.seconds().Quo(n)
	} else {
		r, ok = d.seconds().Mul(n)
	}
	if !ok {
		return nil
	}
	out, ok := dtFromSeconds(r)
	if !ok {
		return nil
	}
	return out
}

func scaleYM(y YearsMonths, n Number, div bool) any {
	var r Number
	var ok bool
	if div {
		r, ok = NewNumber(y.months).Quo(n)
	} else {
		r, ok = NewNumber(y.months).Mul(n)
	}
	if !ok {
		return nil
	}
	r, _ = r.round(0, down)
	m, ok := r.Int64()
	if !ok {
		return nil
	}
	return YearsMonths{m}
}

func addMonthsDT(a DateTime, months int64) any {
	w := a.wall
	y, m, d, ok := addMonths(w.Year(), w.Month(), w.Day(), months)
	if !ok {
		return nil
	}
	return DateTime{wall: time.Date(y, m, d, w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC), zone: a.zone}
}

func addDurDT(a DateTime, d DaysTime) any {
	dd := time.Duration(d.sec)*time.Second + time.Duration(d.nsec)
	if d.sec > math.MaxInt64/int64(time.Second) || d.sec < math.MinInt64/int64(time.Second) {
		return nil
	}
	if a.zone.kind == zoneNamed {
		return fromInstant(a.Time().Add(dd), a.zone)
	}
	return DateTime{wall: a.wall.Add(dd), zone: a.zone}
}

// equal is FEEL's =: true, false, or null when the operands cannot be
// compared.
func equal(l, r any) any {
	if l == nil || r == nil {
		return l == nil && r == nil
	}
	switch a := l.(type) {
	case Number:
		if b, ok := r.(Number); ok {
			return a.Cmp(b) == 0
		}
	case string:
		if b, ok := r.(string); ok {
			return a == b
		}
	case bool:
		if b, ok := r.(bool); ok {
			return a == b
		}
	case Date, Time, DateTime, DaysTime, YearsMonths:
		if c, ok := compare(l, r); ok {
			return c == 0
		}
	case []any:
		b, ok := r.([]any)
		if !ok {
			return nil
		}
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			switch equal(norm(a[i]), norm(b[i])) {
			case false:
				return false
			case nil:
				return nil
			}
		}
		return true
	case *Context, map[string]any:
		if !isContext(r) {
			return nil
		}
		ka, kb := ctxKeys(l), ctxKeys(r)
		if len(ka) != len(kb) {
			return false
		}
		for _, k := range ka {
			va, _ := ctxGet(l, k)
			vb, ok := ctxGet(r, k)
			if !ok {
				return false
			}
			switch equal(va, vb) {
			case false:
				return false
			case nil:
				return nil
			}
		}
		return true
	case *Range:
		b, ok := r.(*Range)
		if !ok {
			return nil
		}
		if a.Op != b.Op || a.StartClosed != b.StartClosed || a.EndClosed != b.EndClosed {
			return false
		}
		if equal(a.Start, b.Start) != true || equal(a.End, b.End) != true {
			return false
		}
		return true
	case *Function:
		if b, ok := r.(*Function); ok {
			return a == b
		}
	}
	return nil
}

// compare orders two values of one orderable type.
func compare(l, r any) (int, bool) {
	switch a := l.(type) {
	case Number:
		if b, ok := r.(Number); ok {
			return a.Cmp(b), true
		}
	case string:
		if b, ok := r.(string); ok {
			return strings.Compare(a, b), true
		}
	case Date:
		if b, ok := r.(Date); ok {
			switch {
			case a.year != b.year:
				return cmpInt(int64(a.year), int64(b.year)), true
			case a.month != b.month:
				return cmpInt(int64(a.month), int64(b.month)), true
			}
			return cmpInt(int64(a.day), int64(b.day)), true
		}
	case DateTime:
		if b, ok := r.(DateTime); ok {
			return a.Time().Compare(b.Time()), true
		}
	case Time:
		if b, ok := r.(Time); ok {
			if a.zone.kind == zoneNone && b.zone.kind == zoneNone {
				return cmpInt(a.ns, b.ns), true
			}
			return cmpInt(a.utcNs(), b.utcNs()), true
		}
	case DaysTime:
		if b, ok := r.(DaysTime); ok {
			return a.cmp(b), true
		}
	case YearsMonths:
		if b, ok := r.(YearsMonths); ok {
			return cmpInt(a.months, b.months), true
		}
	}
	return 0, false
}

var weekdays = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

func isoWeekday(t time.Time) int64 {
	w := int64(t.Weekday())
	if w == 0 {
		return 7
	}
	return w
}

// property reads `.name` of a value.
func property(x any, name string) any {
	switch v := x.(type) {
	case *Context, map[string]any:
		r, _ := ctxGet(v, name)
		return r
	case Date:
		return dateProperty(v.utc(), name)
	case DateTime:
		if r := dateProperty(v.wall, name); r != nil {
			return r
		}
		if r := clockProperty(clockNs(v.wall), name); r != nil {
			return r
		}
		return zoneProperty(v.zone, v.wall, name)
	case Time:
		if r := clockProperty(v.ns, name); r != nil {
			return r
		}
		return zoneProperty(v.zone, time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), name)
	case DaysTime:
		s := v.sec
		switch name {
		case "days":
			return NewNumber(s / 86400)
		case "hours":
			return NewNumber(s / 3600 % 24)
		case "minutes":
			return NewNumber(s / 60 % 60)
		case "seconds":
			return NewNumber(s % 60)
		}
	case YearsMonths:
		switch name {
		case "years":
			return NewNumber(v.months / 12)
		case "months":
			return NewNumber(v.months % 12)
		}
	case *Range:
		switch name {
		case "start":
			return v.Start
		case "end":
			return v.End
		case "start included":
			return v.StartClosed
		case "end included":
			return v.EndClosed
		}
	}
	return nil
}

func dateProperty(t time.Time, name string) any {
	switch name {
	case "year":
		return NewNumber(int64(t.Year()))
	case "month":
		return NewNumber(int64(t.Month()))
	case "day":
		return NewNumber(int64(t.Day()))
	case "weekday":
		return NewNumber(isoWeekday(t))
	}
	return nil
}

func clockProperty(ns int64, name string) any {
	switch name {
	case "hour":
		return NewNumber(ns / 3600e9)
	case "minute":
		return NewNumber(ns / 60e9 % 60)
	case "second":
		return NewNumber(ns / 1e9 % 60)
	}
	return nil
}

func zoneProperty(z zone, at time.Time, name string) any {
	switch name {
	case "time offset":
		if z.kind == zoneNone {
			return nil
		}
		return DaysTime{sec: int64(z.offsetAt(at))}
	case "timezone":
		if z.kind == zoneNamed {
			return z.name
		}
	}
	return nil
}

// ftype is a type named after `instance of`.
type ftype struct {
	name   string
	elem   *ftype   // list<T>, range<T>, function result
	keys   []string // context<k: T>
	fields []*ftype // context field types, function parameter types
}

func (t *ftype) matches(v any) bool {
	switch t.name {
	case "Any":
		return v != nil
	case "Null":
		return v == nil
	case "number":
		_, ok := v.(Number)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "date":
		_, ok := v.(Date)
		return ok
	case "time":
		_, ok := v.(Time)
		return ok
	case "date and time":
		_, ok := v.(DateTime)
		return ok
	case "days and time duration":
		_, ok := v.(DaysTime)
		return ok
	case "years and months duration":
		_, ok := v.(YearsMonths)
		return ok
	case "list":
		l, ok := v.([]any)
		if !ok {
			return false
		}
		if t.elem == nil {
			return true
		}
		for _, el := range l {
			if el = norm(el); el != nil && !t.elem.matches(el) {
				return false
			}
		}
		return true
	case "context":
		if !isContext(v) {
			return false
		}
		for i, k := range t.keys {
			x, ok := ctxGet(v, k)
			if !ok || x != nil && !t.fields[i].matches(x) {
				return false
			}
		}
		return true
	case "range":
		r, ok := v.(*Range)
		if !ok {
			return false
		}
		if t.elem == nil {
			return true
		}
		return (r.Start == nil || t.elem.matches(r.Start)) && (r.End == nil || t.elem.matches(r.End))
	case "function":
		f, ok := v.(*Function)
		if !ok {
			return false
		}
		if t.elem == nil || f.bi != nil {
			return true // function without a signature, or a built-in
		}
		// A function conforms when it takes as many parameters, each
		// declared type (if any) accepting the one asked for.
		if len(f.params) != len(t.fields) {
			return false
		}
		for i, pt := range f.types {
			if pt != nil && !pt.accepts(t.fields[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// accepts reports whether every value of type u is a value of t.
func (t *ftype) accepts(u *ftype) bool {
	if t.name == "Any" {
		return true
	}
	if t.name != u.name || len(t.keys) != len(u.keys) || len(t.fields) != len(u.fields) {
		return false
	}
	if (t.elem == nil) != (u.elem == nil) || t.elem != nil && !t.elem.accepts(u.elem) {
		return false
	}
	for i := range t.fields {
		if t.keys != nil && t.keys[i] != u.keys[i] || !t.fields[i].accepts(u.fields[i]) {
			return false
		}
	}
	return true
}

// temporalLiteral reads the text of @"…": a date, time, date and time or
// duration; nil when it is none of them.
func temporalLiteral(s string) any {
	if d, n, ok := parseDate(s); ok && n == len(s) {
		return d
	}
	head, _, _ := strings.Cut(s, "@")
	if strings.Contains(head, "T") && !strings.HasPrefix(s, "P") && !strings.HasPrefix(s, "-P") {
		if dt, ok := parseDateTime(s); ok {
			return dt
		}
		return nil
	}
	if t, ok := parseTime(s); ok {
		return t
	}
	if d, ok := parseDuration(s); ok {
		return d
	}
	return nil
}
