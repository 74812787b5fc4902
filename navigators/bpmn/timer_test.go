package bpmn

import (
	"testing"
	"time"
)

// TestTimerDue: when timers first fire and when cycles fire next, ISO 8601
// and cron (Spring's six fields, as Zeebe reads them; UTC).
func TestTimerDue(t *testing.T) {
	now := time.Date(2026, 3, 6, 16, 30, 0, 0, time.UTC) // a Friday
	tests := []struct{ def, want string }{
		{"timeDuration PT5M", "2026-03-06T16:35:00Z"},
		{"timeDate 2026-04-01T09:00:00Z", "2026-04-01T09:00:00Z"},
		{"timeCycle R3/PT10M", "2026-03-06T16:40:00Z"},
		{"timeCycle 0 0 9-17 * * MON-FRI", "2026-03-06T17:00:00Z"},
		{"timeCycle 0 0 9 * * MON-FRI", "2026-03-09T09:00:00Z"}, // over the weekend
		{"timeCycle 0 */15 * ? * *", "2026-03-06T16:45:00Z"},
		{"timeCycle 30 0 0 1 JAN,jul ?", "2026-07-01T00:00:30Z"},
		{"timeCycle 0 0 0 * * 7", "2026-03-08T00:00:00Z"}, // 7 is Sunday
		{"timeCycle @monthly", "2026-04-01T00:00:00Z"},
		{"timeCycle 0 0 0 29 2 *", "2028-02-29T00:00:00Z"},
	}
	for _, tc := range tests {
		got, err := TimerDue(tc.def, now)
		if err != nil || got.Format(time.RFC3339) != tc.want {
			t.Errorf("TimerDue(%q) = %v, %v; want %s", tc.def, got, err, tc.want)
		}
	}
	// Cron cycles fire at each match, forever; an ISO cycle counts its
	// repetitions.
	due := time.Date(2026, 3, 6, 17, 0, 0, 0, time.UTC)
	if next, ok := CycleNext("timeCycle 0 0 9-17 * * MON-FRI", due, 100); !ok || next.Format(time.RFC3339) != "2026-03-09T09:00:00Z" {
		t.Errorf("CycleNext(cron) = %v, %v; want Monday 09:00", next, ok)
	}
	if _, ok := CycleNext("timeCycle R3/PT10M", due, 3); ok {
		t.Error("CycleNext(R3) after 3 fires: want no more")
	}
	if _, err := TimerDue("timeCycle 0 0 0 30 2 *", now); err == nil {
		t.Error("TimerDue of a cron matching no date: want an error")
	}
}

// BenchmarkCronNext: the next match of a working-hours cron from a
// Friday evening (over the weekend).
func BenchmarkCronNext(b *testing.B) {
	c, err := parseCron("0 0 9-17 * * MON-FRI")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 3, 6, 18, 30, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.next(now); !ok {
			b.Fatal("no next")
		}
	}
}
