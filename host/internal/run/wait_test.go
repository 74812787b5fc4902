package run

import (
	"testing"
	"time"
)

func TestTimerDue(t *testing.T) {
	now := time.Date(2026, 1, 31, 9, 0, 0, 0, time.UTC)
	// The run engine links no timer language: it reads timers through
	// the builtin navigator found by name (the tests link bpmn).
	r := &Runner{events: eventSemantics(nil, "bpmn")}
	if r.events == nil {
		t.Fatal("no registered navigator implements sdk.EventSemantics")
	}
	for _, tt := range []struct {
		name, def, want, err string
	}{
		{"seconds", "timeDuration PT2S", "2026-01-31T09:00:02Z", ""},
		{"days and hours", "timeDuration P1DT2H", "2026-02-01T11:00:00Z", ""},
		{"months", "timeDuration P1M", "2026-02-28T09:00:00Z", ""},
		{"date", "timeDate 2026-03-01T10:00:00Z", "2026-03-01T10:00:00Z", ""},
		{"date with offset", "timeDate 2026-03-01T10:00:00+01:00", "2026-03-01T09:00:00Z", ""},
		{"cycle", "timeCycle R3/PT10M", "2026-01-31T09:10:00Z", ""},
		{"cycle with future start", "timeCycle R/2026-02-01T00:00:00Z/P1D", "2026-02-01T00:00:00Z", ""},
		{"cycle with past start", "timeCycle R/2026-01-01T00:00:00Z/P1D", "2026-02-01T00:00:00Z", ""},
		{"cron", "timeCycle 0 0 9 * * ?", "2026-02-01T09:00:00Z", ""},
		{"cron matching no date", "timeCycle 0 0 0 30 2 *", "", `timeCycle "0 0 0 30 2 *": matches no time in the next 30 years`},
		{"bad duration", "timeDuration soon", "", `timeDuration "soon": not an ISO 8601 duration`},
		{"bad date", "timeDate tomorrow", "", `timeDate "tomorrow": not an ISO 8601 date and time`},
		{"no kind", "PT2S", "", `timer "PT2S": want timeDuration, timeDate or timeCycle`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.timerDue(tt.def, now)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := got.UTC().Format(time.RFC3339); s != tt.want {
				t.Errorf("due %s, want %s", s, tt.want)
			}
		})
	}
}
