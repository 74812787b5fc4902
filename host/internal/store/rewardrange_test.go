package store

import (
	"strings"
	"testing"
)

// TestParseReward: X or NAME=X, in range, never NaN.
func TestParseReward(t *testing.T) {
	for _, tt := range []struct {
		in, dim string
		v       float64
		err     string
	}{
		{"1", "", 1, ""},
		{"-0.5", "", -0.5, ""},
		{"safety=1", "safety", 1, ""},
		{"2", "", 0, "2 is out of range: want -1 (bad) to 1 (good)"},
		{"NaN", "", 0, `"NaN": NaN and Inf are not allowed: want a number from -1 (bad) to 1 (good)`},
		{"a=nan", "", 0, `"a=nan": NaN and Inf are not allowed: want a number from -1 (bad) to 1 (good)`},
		{"-Inf", "", 0, `"-Inf": NaN and Inf are not allowed: want a number from -1 (bad) to 1 (good)`},
		{"safety=", "", 0, `"safety=" is not a number`},
		{"bad name=1", "", 0, "dimension"},
	} {
		dim, v, err := ParseReward(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want an error containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || dim != tt.dim || v != tt.v {
			t.Errorf("%q: %q %v %v, want %q %v", tt.in, dim, v, err, tt.dim, tt.v)
		}
	}
}
