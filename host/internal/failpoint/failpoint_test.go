package failpoint

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]int
		err      string
	}{
		{name: "unset", in: ""},
		{name: "one", in: "run.step.done:3", want: map[string]int{"run.step.done": 3}},
		{name: "two", in: " a:1 , b:2 ", want: map[string]int{"a": 1, "b": 2}},
		{name: "no count", in: "a", err: `SEXTANT_FAILPOINT: entry "a": want NAME:N with N ≥ 1`},
		{name: "zero", in: "a:0", err: `SEXTANT_FAILPOINT: entry "a:0": want NAME:N with N ≥ 1`},
		{name: "no name", in: ":2", err: `SEXTANT_FAILPOINT: entry ":2": want NAME:N with N ≥ 1`},
		{name: "not a number", in: "a:two", err: `SEXTANT_FAILPOINT: entry "a:two": want NAME:N with N ≥ 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("parse(%q) error = %v, want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}
