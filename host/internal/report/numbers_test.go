package report

import (
	"errors"
	"math"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

func TestFixed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		v      float64
		d      int
		signed bool
		want   string
	}{
		{"positive signed", 0.0583, 3, true, "+0.058"},
		{"negative", -32.15, 0, true, "-32"},
		{"unsigned", 1520.4, 0, false, "1520"},
		{"noise below zero shows as zero", -0.00004, 3, true, "0.000"},
		{"negative zero", math.Copysign(0, -1), 2, true, "0.00"},
		{"rounded before formatting", 0.12345000000001, 4, false, "0.1235"},
		{"nan", math.NaN(), 3, true, "n/a"},
		{"inf", math.Inf(1), 3, true, "n/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fixed(tc.v, tc.d, tc.signed); got != tc.want {
				t.Errorf("fixed(%v, %d, %v) = %q, want %q", tc.v, tc.d, tc.signed, got, tc.want)
			}
		})
	}
}

func TestPValue(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		want string
	}{{0.0004, "<0.001"}, {0.001, "0.001"}, {0.0078125, "0.008"}, {0.5, "0.500"}, {1, "1.000"}, {math.NaN(), "n/a"}} {
		if got := pValue(tc.p); got != tc.want {
			t.Errorf("pValue(%v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestRound6(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0.1 + 0.2, 0.3},
		{123456789, 123457000},
		{-0.0000123456789, -0.0000123457},
		{math.Copysign(0, -1), 0},
		{1e-300, 1e-300},
	} {
		got := round6(tc.in)
		if got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
			t.Errorf("round6(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if !math.IsNaN(round6(math.NaN())) || !math.IsInf(round6(math.Inf(-1)), -1) {
		t.Error("non-finite values changed")
	}
}

func TestMetricCells(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    sdk.Metric
		want cells
	}{
		{"binary in percent and points",
			sdk.Metric{Name: "success", Kind: "binary", Baseline: 0.8, Candidate: 0.85, Effect: 0.05, CILow: 0.01, CIHigh: 0.09, P: 0.02, N: 50, HigherIsBetter: true},
			cells{Name: "success", Kind: "binary", Baseline: "80.0%", Candidate: "85.0%", Effect: "+5.0pp",
				CILow: "+1.0pp", CIHigh: "+9.0pp", CI: "[+1.0pp, +9.0pp]", P: "0.020", N: "50", Trend: 1}},
		{"continuous, lower is better, worse",
			sdk.Metric{Name: "tokens", Kind: "continuous", Baseline: 1234.5, Candidate: 1300, Effect: 65.5, CILow: 20, CIHigh: 110, P: 0.0001, N: 9},
			cells{Name: "tokens", Kind: "continuous", Baseline: "1234", Candidate: "1300", Effect: "+66",
				CILow: "+20", CIHigh: "+110", CI: "[+20, +110]", P: "<0.001", N: "9", Trend: -1}},
		{"small values keep three significant digits",
			sdk.Metric{Name: "cost", Kind: "continuous", Baseline: 0.0123, Candidate: 0.0121, Effect: -0.0002, CILow: -0.0005, CIHigh: 0.0001, P: 0.4, N: 3},
			cells{Name: "cost", Kind: "continuous", Baseline: "0.0123", Candidate: "0.0121", Effect: "-0.0002",
				CILow: "-0.0005", CIHigh: "+0.0001", CI: "[-0.0005, +0.0001]", P: "0.400", N: "3", Trend: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := metricCells(tc.m); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestGeneral(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{3, "3"}, {0.99, "0.99"}, {-0.07000000000000006, "-0.07"}, {1234567, "1234570"}, {1e-9, "1e-09"}, {math.NaN(), "n/a"}} {
		if got := general(tc.v); got != tc.want {
			t.Errorf("general(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestLookup(t *testing.T) {
	for _, name := range Formats() {
		if w, err := Lookup(name); err != nil || w == nil {
			t.Errorf("Lookup(%q): %v", name, err)
		}
	}
	_, err := Lookup("jsn")
	if want := `unknown report format "jsn" (did you mean "json"?); known formats: html, json, junit, md, text`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if !errors.Is(err, sdk.ErrInvalid) {
		t.Error("not sdk.ErrInvalid")
	}
}

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		spec, format, path, err string
	}{
		{spec: "junit=out/report.xml", format: "junit", path: "out/report.xml"},
		{spec: "md=a=b.md", format: "md", path: "a=b.md"},
		{spec: "junit", err: `report "junit": want FORMAT=PATH, as in junit=report.xml`},
		{spec: "=x.json", err: `report "=x.json": want FORMAT=PATH, as in junit=report.xml`},
		{spec: "html=", err: `report "html=": want FORMAT=PATH, as in junit=report.xml`},
		{spec: "pptx=r.pptx", err: `report "pptx=r.pptx": unknown report format "pptx"; known formats: html, json, junit, md, text`},
		{spec: "junti=r.xml", err: `report "junti=r.xml": unknown report format "junti" (did you mean "junit"?); known formats: html, json, junit, md, text`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			format, path, err := ParseSpec(tc.spec)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got error %v, want %s", err, tc.err)
				}
				if !errors.Is(err, sdk.ErrInvalid) {
					t.Error("not sdk.ErrInvalid")
				}
				return
			}
			if err != nil || format != tc.format || path != tc.path {
				t.Fatalf("got %q %q %v", format, path, err)
			}
		})
	}
}
