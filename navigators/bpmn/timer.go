package bpmn

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/navigators/feel"
)

// Due times of timers, for the host that waits for them: the navigator
// reads the timer language (ISO 8601 and cron), so that the host's run
// engine needs no FEEL or cron of its own.

var (
	timerAfter    = feel.MustParse(`now() + duration(v)`)
	timerDate     = feel.MustParse(`date and time(v)`)
	timerInterval = feel.MustParse(`duration(v)`)
)

// TimerDue is when a timer defined as def ("timeDuration PT5M", "timeDate
// 2026-…", "timeCycle R3/PT10M", "timeCycle 0 0 9-17 * * MON-FRI") first
// fires, counted from now. An ISO 8601 cycle fires first after one
// interval (or at its start date); a cron cycle at its first match after
// now.
func TimerDue(def string, now time.Time) (time.Time, error) {
	kind, v, _ := strings.Cut(strings.TrimSpace(def), " ")
	v = strings.TrimSpace(v)
	after := func(d string) (time.Time, error) {
		x, err := timerAfter.EvalAt(map[string]any{"v": d}, now)
		if err != nil {
			return time.Time{}, err
		}
		dt, ok := x.(feel.DateTime)
		if !ok {
			return time.Time{}, fmt.Errorf("%s %q: not an ISO 8601 duration", kind, d)
		}
		return dt.Time(), nil
	}
	switch kind {
	case "timeDuration":
		return after(v)
	case "timeDate":
		x, err := timerDate.EvalAt(map[string]any{"v": v}, now)
		if err != nil {
			return time.Time{}, err
		}
		dt, ok := x.(feel.DateTime)
		if !ok {
			return time.Time{}, fmt.Errorf("timeDate %q: not an ISO 8601 date and time", v)
		}
		return dt.Time(), nil
	case "timeCycle":
		if isCron(v) {
			c, err := parseCron(v)
			if err != nil {
				return time.Time{}, fmt.Errorf("timeCycle %q: %v", v, err)
			}
			t, ok := c.next(now)
			if !ok {
				return time.Time{}, fmt.Errorf("timeCycle %q: matches no time in the next %d years", v, cronHorizon)
			}
			return t, nil
		}
		parts := strings.Split(v, "/")
		if len(parts) < 2 || !strings.HasPrefix(parts[0], "R") {
			return time.Time{}, fmt.Errorf("timeCycle %q: want an ISO 8601 repetition (R3/PT10M) or a cron expression", v)
		}
		if len(parts) == 3 && !strings.HasPrefix(parts[1], "P") {
			start, err := TimerDue("timeDate "+parts[1], now)
			if err != nil {
				return time.Time{}, err
			}
			if start.After(now) {
				return start, nil
			}
			// A past start: the next repetition after now.
			x, err := timerInterval.EvalAt(map[string]any{"v": parts[2]}, now)
			if err != nil {
				return time.Time{}, err
			}
			if d, ok := x.(feel.DaysTime); ok && d.Duration() > 0 {
				n := now.Sub(start)/d.Duration() + 1
				return start.Add(n * d.Duration()), nil
			}
		}
		return after(parts[1]) // R/interval or R/interval/end
	}
	return time.Time{}, fmt.Errorf("timer %q: want timeDuration, timeDate or timeCycle", def)
}

// CycleNext is when a cycle timer (def "timeCycle R3/PT10M", "timeCycle 0
// 0 9 * * MON") that fell due at due and has fired fires times fires
// next: one interval later, while repetitions are left (R alone repeats
// forever) and before the cycle's end (R3/PT10M/2026-…); a cron cycle at
// its next match, forever. ok is false when it fires no more, or def is
// not a cycle.
func CycleNext(def string, due time.Time, fires int) (time.Time, bool) {
	kind, v, _ := strings.Cut(strings.TrimSpace(def), " ")
	v = strings.TrimSpace(v)
	if kind == "timeCycle" && isCron(v) {
		c, err := parseCron(v)
		if err != nil {
			return time.Time{}, false
		}
		return c.next(due)
	}
	parts := strings.Split(v, "/")
	if kind != "timeCycle" || len(parts) < 2 || len(parts) > 3 || !strings.HasPrefix(parts[0], "R") {
		return time.Time{}, false
	}
	if n := parts[0][1:]; n != "" {
		reps, err := strconv.Atoi(n)
		if err != nil || fires >= reps {
			return time.Time{}, false
		}
	}
	interval := parts[len(parts)-1]
	var end time.Time
	if len(parts) == 3 && strings.HasPrefix(parts[1], "P") { // R/interval/end
		interval = parts[1]
		e, err := TimerDue("timeDate "+parts[2], due)
		if err != nil {
			return time.Time{}, false
		}
		end = e
	}
	x, err := timerAfter.EvalAt(map[string]any{"v": interval}, due)
	if err != nil {
		return time.Time{}, false
	}
	dt, ok := x.(feel.DateTime)
	if !ok || !dt.Time().After(due) || !end.IsZero() && dt.Time().After(end) {
		return time.Time{}, false
	}
	return dt.Time(), true
}
