package bpmn

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cron cycles, as Zeebe reads a timeCycle that is not an ISO 8601
// repetition: Spring's CronExpression, six fields — second, minute, hour,
// day of month, month, day of week — each *, ?, a value, a range (a-b), a
// step (*/n, a/n, a-b/n) or a list of those; months and days of week also
// by name (JAN, MON-FRI; 0 and 7 are Sunday); and the macros @yearly,
// @annually, @monthly, @weekly, @daily, @midnight and @hourly. A time
// matches when every field does (day of month and day of week both, as
// Spring has it). Times are UTC, Zeebe's default zone. Spring's L, W and
// # (last day, nearest weekday, nth weekday) are refused at load.

// cron is a parsed cron expression: for each field, the values it takes.
type cron struct {
	sec, min, hour, dom, month, dow [61]bool
}

var cronMacros = map[string]string{
	"@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
	"@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *", "@hourly": "0 0 * * * *",
}

var (
	monthNames = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	dayNames   = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
)

// isCron reports whether v looks like a cron expression rather than an
// ISO 8601 repetition: several fields, or a macro.
func isCron(v string) bool {
	return strings.HasPrefix(v, "@") || len(strings.Fields(v)) > 1
}

// parseCron parses a cron cycle. The error names the field.
func parseCron(v string) (*cron, error) {
	if m, ok := cronMacros[strings.ToLower(strings.TrimSpace(v))]; ok {
		v = m
	}
	f := strings.Fields(v)
	if len(f) != 6 {
		return nil, fmt.Errorf("a cron cycle has six fields (second minute hour day-of-month month day-of-week, like 0 0 9-17 * * MON-FRI), got %d", len(f))
	}
	c := &cron{}
	fields := []struct {
		name   string
		into   *[61]bool
		lo, hi int
		names  []string
		offset int // value of names[0]
	}{
		{"second", &c.sec, 0, 59, nil, 0},
		{"minute", &c.min, 0, 59, nil, 0},
		{"hour", &c.hour, 0, 23, nil, 0},
		{"day of month", &c.dom, 1, 31, nil, 0},
		{"month", &c.month, 1, 12, monthNames, 1},
		{"day of week", &c.dow, 0, 7, dayNames, 0},
	}
	for i, fd := range fields {
		if err := cronField(f[i], fd.into, fd.lo, fd.hi, fd.names, fd.offset, i == 3 || i == 5); err != nil {
			return nil, fmt.Errorf("cron %s %q: %v", fd.name, f[i], err)
		}
	}
	if c.dow[7] {
		c.dow[0] = true // 7 is Sunday too
	}
	return c, nil
}

// cronField sets into[v] for each value field s takes within lo..hi.
func cronField(s string, into *[61]bool, lo, hi int, names []string, offset int, question bool) error {
	if question && s == "?" {
		s = "*"
	}
	if strings.Contains(s, "#") || names == nil && strings.ContainsAny(s, "LW") {
		return fmt.Errorf("the special characters L, W and # are not supported")
	}
	for _, part := range strings.Split(s, ",") {
		rng, step, hasStep := strings.Cut(part, "/")
		n := 1
		if hasStep {
			var err error
			if n, err = strconv.Atoi(step); err != nil || n <= 0 {
				return fmt.Errorf("step %q: want a whole number above 0", step)
			}
		}
		var from, to int
		switch a, b, isRange := strings.Cut(rng, "-"); {
		case rng == "*":
			from, to = lo, hi
		case isRange:
			var err error
			if from, err = cronValue(a, lo, hi, names, offset); err != nil {
				return err
			}
			if to, err = cronValue(b, lo, hi, names, offset); err != nil {
				return err
			}
			if to < from {
				return fmt.Errorf("range %s: the end comes before the start", rng)
			}
		default:
			v, err := cronValue(rng, lo, hi, names, offset)
			if err != nil {
				return err
			}
			from, to = v, v
			if hasStep {
				to = hi
			}
		}
		for v := from; v <= to; v += n {
			into[v] = true
		}
	}
	return nil
}

// cronValue reads one value of a field: a number within lo..hi or a name.
func cronValue(s string, lo, hi int, names []string, offset int) (int, error) {
	for i, nm := range names {
		if strings.EqualFold(s, nm) {
			return i + offset, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%q is not a value from %d to %d", s, lo, hi)
	}
	return v, nil
}

// cronHorizon bounds the search for the next match: an expression that
// matches no date (0 0 0 30 2 *) is not searched forever.
const cronHorizon = 30 // years: the calendar (leap days and weekdays) repeats every 28

// next is the first time strictly after t that c matches, in UTC; ok is
// false when none comes within cronHorizon years.
func (c *cron) next(t time.Time) (time.Time, bool) {
	t = t.UTC().Truncate(time.Second).Add(time.Second)
	limit := t.Year() + cronHorizon
	for t.Year() <= limit {
		switch {
		case !c.month[int(t.Month())]:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dom[t.Day()] || !c.dow[int(t.Weekday())]:
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case !c.hour[t.Hour()]:
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, time.UTC)
		case !c.min[t.Minute()]:
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute()+1, 0, 0, time.UTC)
		case !c.sec[t.Second()]:
			t = t.Add(time.Second)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}
