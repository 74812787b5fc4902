package feel

import (
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zone rules inside the binary: same answers on every machine and in wasm
)

// zone is the time zone of a time or date and time: none (a local,
// "floating" value), a fixed offset, or an IANA zone.
type zone struct {
	kind uint8 // zoneNone, zoneOffset, zoneNamed
	off  int32 // seconds east of UTC, for zoneOffset
	name string
	loc  *time.Location
}

const (
	zoneNone uint8 = iota
	zoneOffset
	zoneNamed
)

var locCache sync.Map

func loadZone(name string) (*time.Location, bool) {
	if l, ok := locCache.Load(name); ok {
		return l.(*time.Location), true
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "..") || name == "Local" {
		return nil, false
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, false
	}
	locCache.Store(name, l)
	return l, true
}

// offsetAt returns the zone's offset at the wall-clock time w (given in UTC
// fields).
func (z zone) offsetAt(w time.Time) int32 {
	switch z.kind {
	case zoneOffset:
		return z.off
	case zoneNamed:
		t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), z.loc)
		_, off := t.Zone()
		return int32(off)
	}
	return 0
}

func (z zone) appendString(b []byte) []byte {
	switch z.kind {
	case zoneOffset:
		return appendOffset(b, z.off)
	case zoneNamed:
		return append(append(b, '@'), z.name...)
	}
	return b
}

func appendOffset(b []byte, off int32) []byte {
	if off == 0 {
		return append(b, 'Z')
	}
	if off < 0 {
		b = append(b, '-')
		off = -off
	} else {
		b = append(b, '+')
	}
	b = append2(b, int(off/3600))
	b = append(b, ':')
	b = append2(b, int(off/60%60))
	if off%60 != 0 {
		b = append(b, ':')
		b = append2(b, int(off%60))
	}
	return b
}

func append2(b []byte, v int) []byte {
	return append(b, byte('0'+v/10%10), byte('0'+v%10))
}

// Date is a FEEL date (no time, no zone).
type Date struct {
	year  int
	month time.Month
	day   int
}

// NewDate returns the date y-m-d; false when it does not exist.
func NewDate(y int, m time.Month, d int) (Date, bool) {
	if y < -999999999 || y > 999999999 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return Date{}, false
	}
	return Date{y, m, d}, true
}

// Year returns the year (negative before year 1, 0 for 1 BC).
func (d Date) Year() int { return d.year }

// Month returns the month.
func (d Date) Month() time.Month { return d.month }

// Day returns the day of the month.
func (d Date) Day() int { return d.day }

func (d Date) utc() time.Time { return time.Date(d.year, d.month, d.day, 0, 0, 0, 0, time.UTC) }

func dateOf(t time.Time) Date { return Date{t.Year(), t.Month(), t.Day()} }

// String returns the date as FEEL prints it: 2024-02-29, -0044-03-15.
func (d Date) String() string { return string(d.appendString(nil)) }

func (d Date) appendString(b []byte) []byte {
	y := d.year
	if y < 0 {
		b = append(b, '-')
		y = -y
	}
	ys := strconv.Itoa(y)
	for i := len(ys); i < 4; i++ {
		b = append(b, '0')
	}
	b = append(b, ys...)
	b = append(b, '-')
	b = append2(b, int(d.month))
	b = append(b, '-')
	return append2(b, d.day)
}

func daysIn(y int, m time.Month) int {
	switch m {
	case time.February:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// addMonths adds n months, clamping the day to the month's end as Java's
// plusMonths (and every FEEL engine on the JVM) does.
func addMonths(y int, m time.Month, d int, n int64) (int, time.Month, int, bool) {
	total := int64(y)*12 + int64(m-1) + n
	ny := total / 12
	nm := total % 12
	if nm < 0 {
		nm += 12
		ny--
	}
	if ny < -999999999 || ny > 999999999 {
		return 0, 0, 0, false
	}
	mm := time.Month(nm + 1)
	if dd := daysIn(int(ny), mm); d > dd {
		d = dd
	}
	return int(ny), mm, d, true
}

// Time is a FEEL time of day, with an optional zone.
type Time struct {
	ns   int64 // nanoseconds since midnight
	zone zone
}

// String returns the time as FEEL prints it: 10:30:00, 10:30:00.5+02:00,
// 10:30:00@Europe/Paris.
func (t Time) String() string { return string(t.appendString(nil)) }

func (t Time) appendString(b []byte) []byte {
	b = appendClock(b, t.ns)
	return t.zone.appendString(b)
}

func appendClock(b []byte, ns int64) []byte {
	s := ns / 1e9
	b = append2(b, int(s/3600))
	b = append(b, ':')
	b = append2(b, int(s/60%60))
	b = append(b, ':')
	b = append2(b, int(s%60))
	if f := ns % 1e9; f != 0 {
		fs := strconv.FormatInt(f+1e9, 10)[1:]
		b = append(b, '.')
		b = append(b, strings.TrimRight(fs, "0")...)
	}
	return b
}

// utcNs returns the time of day in UTC (floating times as if UTC).
func (t Time) utcNs() int64 {
	off := int64(t.zone.offsetAt(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)))
	v := (t.ns - off*1e9) % (86400 * 1e9)
	if v < 0 {
		v += 86400 * 1e9
	}
	return v
}

// DateTime is a FEEL date and time, with an optional zone.
type DateTime struct {
	wall time.Time // the local date and clock reading, in UTC fields
	zone zone
}

// Time returns the instant; a date and time without zone is taken as UTC.
func (d DateTime) Time() time.Time {
	off := d.zone.offsetAt(d.wall)
	return d.wall.Add(-time.Duration(off) * time.Second)
}

// String returns the date and time as FEEL prints it.
func (d DateTime) String() string { return string(d.appendString(nil)) }

func (d DateTime) appendString(b []byte) []byte {
	b = dateOf(d.wall).appendString(b)
	b = append(b, 'T')
	b = appendClock(b, clockNs(d.wall))
	return d.zone.appendString(b)
}

func clockNs(t time.Time) int64 {
	return int64(t.Hour())*3600e9 + int64(t.Minute())*60e9 + int64(t.Second())*1e9 + int64(t.Nanosecond())
}

func dateTimeFromTime(t time.Time) DateTime {
	wall := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	name := t.Location().String()
	var z zone
	if t.Location() == time.UTC {
		z = zone{kind: zoneOffset}
	} else if l, ok := loadZone(name); ok && name != "UTC" {
		z = zone{kind: zoneNamed, name: name, loc: l}
	} else {
		_, off := t.Zone()
		z = zone{kind: zoneOffset, off: int32(off)}
	}
	return DateTime{wall: wall, zone: z}
}

// fromInstant returns the date and time in zone z at instant t.
func fromInstant(t time.Time, z zone) DateTime {
	switch z.kind {
	case zoneNamed:
		l := t.In(z.loc)
		return DateTime{wall: time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC), zone: z}
	case zoneOffset:
		return DateTime{wall: t.UTC().Add(time.Duration(z.off) * time.Second), zone: z}
	}
	return DateTime{wall: t.UTC(), zone: z}
}

// DaysTime is a FEEL days and time duration.
type DaysTime struct {
	sec  int64
	nsec int32 // same sign as sec
}

// NewDaysTime returns the duration d.
func NewDaysTime(d time.Duration) DaysTime {
	return DaysTime{sec: int64(d / time.Second), nsec: int32(d % time.Second)}
}

// Duration returns the duration as a time.Duration (saturating).
func (d DaysTime) Duration() time.Duration {
	const max = int64(1<<63-1) / 1e9
	switch {
	case d.sec > max-1:
		return time.Duration(1<<63 - 1)
	case d.sec < -max+1:
		return time.Duration(-1 << 63)
	}
	return time.Duration(d.sec)*time.Second + time.Duration(d.nsec)
}

func dtFromNs(sec int64, nsec int64) DaysTime {
	sec += nsec / 1e9
	nsec %= 1e9
	if sec > 0 && nsec < 0 {
		sec--
		nsec += 1e9
	} else if sec < 0 && nsec > 0 {
		sec++
		nsec -= 1e9
	}
	return DaysTime{sec: sec, nsec: int32(nsec)}
}

func (d DaysTime) neg() DaysTime { return DaysTime{-d.sec, -d.nsec} }

func (d DaysTime) sign() int {
	switch {
	case d.sec > 0 || d.sec == 0 && d.nsec > 0:
		return 1
	case d.sec < 0 || d.nsec < 0:
		return -1
	}
	return 0
}

func (d DaysTime) cmp(e DaysTime) int {
	if d.sec != e.sec {
		return cmpInt(d.sec, e.sec)
	}
	return cmpInt(int64(d.nsec), int64(e.nsec))
}

// seconds returns the duration as a number of seconds.
func (d DaysTime) seconds() Number {
	n := NewNumber(d.sec)
	if d.nsec != 0 {
		n, _ = n.Add(Number{c: int64(d.nsec), e: -9})
	}
	return n
}

// String returns the duration in ISO 8601 form, e.g. P1DT2H30M, -PT0.5S.
func (d DaysTime) String() string { return string(d.appendString(nil)) }

func (d DaysTime) appendString(b []byte) []byte {
	if d.sec == 0 && d.nsec == 0 {
		return append(b, "PT0S"...)
	}
	s, ns := d.sec, int64(d.nsec)
	if d.sign() < 0 {
		b = append(b, '-')
		s, ns = -s, -ns
	}
	b = append(b, 'P')
	days, h, m, sec := s/86400, s/3600%24, s/60%60, s%60
	if days != 0 {
		b = strconv.AppendInt(b, days, 10)
		b = append(b, 'D')
	}
	if h == 0 && m == 0 && sec == 0 && ns == 0 {
		return b
	}
	b = append(b, 'T')
	if h != 0 {
		b = strconv.AppendInt(b, h, 10)
		b = append(b, 'H')
	}
	if m != 0 {
		b = strconv.AppendInt(b, m, 10)
		b = append(b, 'M')
	}
	if sec != 0 || ns != 0 {
		b = strconv.AppendInt(b, sec, 10)
		if ns != 0 {
			fs := strconv.FormatInt(ns+1e9, 10)[1:]
			b = append(b, '.')
			b = append(b, strings.TrimRight(fs, "0")...)
		}
		b = append(b, 'S')
	}
	return b
}

// YearsMonths is a FEEL years and months duration.
type YearsMonths struct {
	months int64
}

// NewYearsMonths returns a duration of the given months.
func NewYearsMonths(months int64) YearsMonths { return YearsMonths{months} }

// Months returns the total number of months.
func (y YearsMonths) Months() int64 { return y.months }

// String returns the duration in ISO 8601 form, e.g. P1Y2M, -P3M.
func (y YearsMonths) String() string { return string(y.appendString(nil)) }

func (y YearsMonths) appendString(b []byte) []byte {
	m := y.months
	if m == 0 {
		return append(b, "P0M"...)
	}
	if m < 0 {
		b = append(b, '-')
		m = -m
	}
	b = append(b, 'P')
	if m/12 != 0 {
		b = strconv.AppendInt(b, m/12, 10)
		b = append(b, 'Y')
	}
	if m%12 != 0 {
		b = strconv.AppendInt(b, m%12, 10)
		b = append(b, 'M')
	}
	return b
}

// ---- parsing ----

// parseDate reads YYYY-MM-DD (the year may have more digits and a sign).
func parseDate(s string) (Date, int, bool) {
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j-i < 4 || j-i > 9 || (j-i > 4 && s[i] == '0') {
		return Date{}, 0, false
	}
	y, _ := strconv.Atoi(s[i:j])
	if neg {
		y = -y
	}
	if len(s) < j+6 || s[j] != '-' || s[j+3] != '-' {
		return Date{}, 0, false
	}
	m, ok1 := num2(s[j+1:])
	d, ok2 := num2(s[j+4:])
	if !ok1 || !ok2 {
		return Date{}, 0, false
	}
	dt, ok := NewDate(y, time.Month(m), d)
	return dt, j + 6, ok
}

func num2(s string) (int, bool) {
	if len(s) < 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

// parseClock reads hh:mm:ss[.fff][zone]; allow24 admits 24:00:00.
func parseClock(s string, allow24 bool) (int64, zone, bool) {
	h, ok1 := num2(s)
	if !ok1 || len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, zone{}, false
	}
	m, ok2 := num2(s[3:])
	sec, ok3 := num2(s[6:])
	if !ok2 || !ok3 || m > 59 || sec > 59 || h > 24 || h == 24 && !allow24 {
		return 0, zone{}, false
	}
	i := 8
	var frac int64
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i {
			return 0, zone{}, false
		}
		digits := s[i:j]
		if len(digits) > 9 {
			digits = digits[:9]
		}
		frac, _ = strconv.ParseInt(digits, 10, 64)
		for k := len(digits); k < 9; k++ {
			frac *= 10
		}
		i = j
	}
	if h == 24 && (m != 0 || sec != 0 || frac != 0) {
		return 0, zone{}, false
	}
	z, ok := parseZone(s[i:])
	if !ok {
		return 0, zone{}, false
	}
	return int64(h)*3600e9 + int64(m)*60e9 + int64(sec)*1e9 + frac, z, true
}

func parseZone(s string) (zone, bool) {
	switch {
	case s == "":
		return zone{}, true
	case s == "Z" || s == "z":
		return zone{kind: zoneOffset}, true
	case s[0] == '@':
		l, ok := loadZone(s[1:])
		if !ok {
			return zone{}, false
		}
		return zone{kind: zoneNamed, name: s[1:], loc: l}, true
	case s[0] == '+' || s[0] == '-':
		h, ok1 := num2(s[1:])
		if !ok1 || len(s) < 6 || s[3] != ':' {
			return zone{}, false
		}
		m, ok2 := num2(s[4:])
		sec := 0
		rest := s[6:]
		if len(rest) == 3 && rest[0] == ':' {
			var ok3 bool
			if sec, ok3 = num2(rest[1:]); !ok3 {
				return zone{}, false
			}
		} else if rest != "" {
			return zone{}, false
		}
		if !ok2 || h > 18 || m > 59 || sec > 59 {
			return zone{}, false
		}
		off := int32(h*3600 + m*60 + sec)
		if s[0] == '-' {
			off = -off
		}
		return zone{kind: zoneOffset, off: off}, true
	}
	return zone{}, false
}

func parseTime(s string) (Time, bool) {
	ns, z, ok := parseClock(s, false)
	return Time{ns: ns, zone: z}, ok
}

// parseDateTime reads a date and time; a bare date means its midnight.
func parseDateTime(s string) (DateTime, bool) {
	d, n, ok := parseDate(s)
	if !ok {
		return DateTime{}, false
	}
	if n == len(s) {
		return DateTime{wall: d.utc()}, true
	}
	if s[n] != 'T' {
		return DateTime{}, false
	}
	ns, z, ok := parseClock(s[n+1:], true)
	if !ok {
		return DateTime{}, false
	}
	return DateTime{wall: d.utc().Add(time.Duration(ns)), zone: z}, true
}

// parseDuration reads an ISO 8601 duration of either FEEL kind.
func parseDuration(s string) (any, bool) {
	neg := false
	if strings.HasPrefix(s, "-") {
		neg = true
		s = s[1:]
	}
	if !strings.HasPrefix(s, "P") || len(s) < 2 {
		return nil, false
	}
	s = s[1:]
	datePart, timePart, hasT := strings.Cut(s, "T")
	if hasT && timePart == "" {
		return nil, false
	}
	var y, mo, d, h, mi int64
	var secs Number
	var seen [6]bool
	order := "YMD"
	last := -1
	for datePart != "" {
		i := 0
		for i < len(datePart) && datePart[i] >= '0' && datePart[i] <= '9' {
			i++
		}
		if i == 0 || i == len(datePart) || i > 18 {
			return nil, false
		}
		v, _ := strconv.ParseInt(datePart[:i], 10, 64)
		k := strings.IndexByte(order, datePart[i])
		if k <= last {
			return nil, false
		}
		last = k
		seen[k] = true
		switch k {
		case 0:
			y = v
		case 1:
			mo = v
		case 2:
			d = v
		}
		datePart = datePart[i+1:]
	}
	last = -1
	for timePart != "" {
		i := 0
		for i < len(timePart) && (timePart[i] >= '0' && timePart[i] <= '9' || timePart[i] == '.') {
			i++
		}
		if i == 0 || i == len(timePart) || i > 30 {
			return nil, false
		}
		k := strings.IndexByte("HMS", timePart[i])
		if k <= last {
			return nil, false
		}
		last = k
		seen[3+k] = true
		if k == 2 {
			txt := timePart[:i]
			if strings.HasSuffix(txt, ".") {
				txt += "0"
			}
			n, err := ParseNumber(txt)
			if err != nil {
				return nil, false
			}
			secs = n
		} else {
			if strings.Contains(timePart[:i], ".") || i > 18 {
				return nil, false
			}
			v, _ := strconv.ParseInt(timePart[:i], 10, 64)
			if k == 0 {
				h = v
			} else {
				mi = v
			}
		}
		timePart = timePart[i+1:]
	}
	ym := seen[0] || seen[1]
	dt := seen[2] || seen[3] || seen[4] || seen[5]
	if ym && dt {
		return nil, false
	}
	if ym {
		m := y*12 + mo
		if y > 1e15 || m < 0 {
			return nil, false
		}
		if neg {
			m = -m
		}
		return YearsMonths{m}, true
	}
	const lim = int64(1) << 50
	if d > lim/86400 || h > lim/3600 || mi > lim/60 {
		return nil, false
	}
	total := d*86400 + h*3600 + mi*60
	whole, frac := secs.Floor(), Number{}
	frac, _ = secs.Sub(whole)
	w, ok := whole.Int64()
	if !ok || w > lim {
		return nil, false
	}
	f, _ := frac.Mul(NewNumber(1e9))
	fn, _ := f.Floor().Int64()
	out := dtFromNs(total+w, fn)
	if neg {
		out = out.neg()
	}
	return out, true
}

// dtFromSeconds converts a number of seconds to a duration.
func dtFromSeconds(n Number) (DaysTime, bool) {
	ns, ok := n.Mul(NewNumber(1e9))
	if !ok {
		return DaysTime{}, false
	}
	r, _ := ns.round(0, halfEven)
	q, rem := new(bigInt).QuoRem(r.truncBig(), bigBillion, new(bigInt))
	if !q.IsInt64() {
		return DaysTime{}, false
	}
	return dtFromNs(q.Int64(), rem.Int64()), true
}
