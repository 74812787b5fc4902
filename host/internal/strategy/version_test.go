package strategy

import (
	"testing"
	"time"
)

func TestBumpMinor(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"2.0.0", "2.1.0", ""},
		{"2.0.3", "2.1.0", ""},
		{"0.9.0", "0.10.0", ""},
		{"1.2.3-rc.1+build.5", "1.3.0", ""},
		{"2.0", "", `bump version: "2.0" is not a semantic version (want e.g. 1.2.0)`},
		{"v2.0.0", "", `bump version: "v2.0.0" is not a semantic version (want e.g. 1.2.0)`},
		{"01.0.0", "", `bump version: "01.0.0" is not a semantic version (want e.g. 1.2.0)`},
		{"1.18446744073709551615.0", "", `bump 1.18446744073709551615.0: minor version overflows`},
		{"1.18446744073709551616.0", "", `bump version: "1.18446744073709551616.0" is not a semantic version: strconv.ParseUint: parsing "18446744073709551616": value out of range`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := BumpMinor(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("BumpMinor(%q) error = %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("BumpMinor(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestVersionCompare(t *testing.T) {
	// Each is lower than the next (semver.org §11), except where equal.
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"}
	for i := range order {
		for j := range order {
			a, _ := ParseVersion(order[i])
			b, err := ParseVersion(order[j])
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
	a, _ := ParseVersion("1.0.0+a")
	b, _ := ParseVersion("1.0.0+b")
	if a.Compare(b) != 0 || a.String() != "1.0.0+a" {
		t.Errorf("build metadata: Compare = %d, String = %s", a.Compare(b), a)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		out  string // FormatDuration(want)
		err  string
	}{
		{in: "7d", want: 7 * 24 * time.Hour, out: "7d"},
		{in: "1w", want: 7 * 24 * time.Hour, out: "7d"},
		{in: "36h", want: 36 * time.Hour, out: "36h"},
		{in: "1d12h", want: 36 * time.Hour, out: "36h"},
		{in: "90m", want: 90 * time.Minute, out: "90m"},
		{in: "1h30m15s", want: time.Hour + 30*time.Minute + 15*time.Second, out: "5415s"},
		{in: "0s", want: 0, out: "0s"},
		{in: "0", want: 0, out: "0s"},
		{in: "", err: `"" is not a duration (want e.g. "7d", "36h" or "1d12h")`},
		{in: "7 days", err: `"7 days" is not a duration (want e.g. "7d", "36h" or "1d12h")`},
		{in: "12h1d", err: `"12h1d" is not a duration (want e.g. "7d", "36h" or "1d12h")`},
		{in: "-1d", err: `"-1d" is not a duration (want e.g. "7d", "36h" or "1d12h")`},
		{in: "1.5d", err: `"1.5d" is not a duration (want e.g. "7d", "36h" or "1d12h")`},
		{in: "100000000w", err: `"100000000w" is too long a duration`},
		{in: "15000w30000d", err: `"15000w30000d" is too long a duration`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("ParseDuration(%q) error = %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if out := FormatDuration(got); out != tc.out {
				t.Errorf("FormatDuration(%v) = %q, want %q", got, out, tc.out)
			}
		})
	}
}
