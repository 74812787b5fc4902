package strategy

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
)

// Durations in strategy files (evolution.cooldown) are whole numbers of
// weeks, days, hours, minutes and seconds, largest unit first, with no
// spaces: "7d", "36h", "1d12h", "90m", "1w", "0s". A day is 24 hours: a
// cooldown counts elapsed time, not calendar days.
var durationRE = regexp.MustCompile(`^(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$`)

var durationUnits = []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second}

// ParseDuration parses a strategy duration such as "7d", "36h" or "1d12h".
func ParseDuration(s string) (time.Duration, error) {
	m := durationRE.FindStringSubmatch(s)
	if m == nil || s == "" {
		if s == "0" {
			return 0, nil
		}
		return 0, fmt.Errorf("%q is not a duration (want e.g. \"7d\", \"36h\" or \"1d12h\")", s)
	}
	var total time.Duration
	for i, unit := range durationUnits {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil || n > int64(math.MaxInt64/unit) || total > math.MaxInt64-time.Duration(n)*unit {
			return 0, fmt.Errorf("%q is too long a duration", s)
		}
		total += time.Duration(n) * unit
	}
	return total, nil
}

// FormatDuration writes d in the largest of d, h, m and s that divides it
// exactly ("7d", "36h", "90m"), the form Encode uses. Sub-second remainders
// are not representable in a strategy file and are truncated.
func FormatDuration(d time.Duration) string {
	d = d.Truncate(time.Second)
	if d <= 0 {
		return "0s"
	}
	for i, suffix := range []string{"d", "h", "m", "s"} {
		unit := durationUnits[i+1]
		if d%unit == 0 {
			return strconv.FormatInt(int64(d/unit), 10) + suffix
		}
	}
	return "0s" // unreachable: every whole-second d is divisible by a second
}
