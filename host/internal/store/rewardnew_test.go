package store

import (
	"strings"
	"testing"
)

func TestNewRewards(t *testing.T) {
	rs, err := NewRewards("t1", "s1", []string{"0.5", "safety=1"}, []string{"ok"}, "fine")
	if err != nil || len(rs) != 2 {
		t.Fatalf("%v, %v", rs, err)
	}
	if r := rs[1]; r.Task != "t1" || r.SpanID != "s1" || r.Dimension != "safety" || r.Value != 1 || r.Note != "fine" || len(r.Tags) != 1 {
		t.Fatalf("second reward %+v", r)
	}
	for values, want := range map[string]string{"1,x=1,x=0": `dimension "x" given twice`, "1,0": `dimension "" given twice`, "2": "out of range"} {
		if _, err := NewRewards("t1", "", strings.Split(values, ","), nil, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", values, err, want)
		}
	}
}
