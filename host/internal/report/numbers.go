package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// sigDigits is how many significant digits a report keeps of any number.
// Bootstrap CIs and p-values can differ in their last bits across platforms
// (FMA, math library); six digits is far more than any decision needs and
// far fewer than float64 noise reaches.
const sigDigits = 6

// round6 rounds v to sigDigits significant digits. Negative zero becomes
// zero; NaN and infinities are returned unchanged.
func round6(v float64) float64 {
	if v == 0 {
		return 0 // turns -0 into 0
	}
	if !finite(v) {
		return v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', sigDigits, 64), 64)
	if r == 0 {
		return 0
	}
	return r
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// trend says whether a metric's CI lies entirely on the improving side of
// zero (+1), entirely on the worsening side (-1), or straddles it (0).
func trend(m sdk.Metric) int {
	lo, hi := round6(m.CILow), round6(m.CIHigh)
	if !finite(lo) || !finite(hi) {
		return 0
	}
	var dir int
	switch {
	case lo > 0:
		dir = 1
	case hi < 0:
		dir = -1
	default:
		return 0
	}
	if !m.HigherIsBetter {
		dir = -dir
	}
	return dir
}

func trendWord(t int) string {
	switch t {
	case 1:
		return "better"
	case -1:
		return "worse"
	}
	return ""
}

// cells is one metric formatted for people.
type cells struct {
	Name, Kind                      string
	Baseline, Candidate             string
	Effect, CILow, CIHigh, CI, P, N string
	Trend                           int
}

// metricCells formats a metric for people. Binary metrics are rates shown
// as percentages with effects in percentage points; continuous metrics keep
// three significant digits of the larger of baseline and candidate, and the
// effect and CI use the same number of decimals.
func metricCells(m sdk.Metric) cells {
	c := cells{Name: m.Name, Kind: m.Kind, N: strconv.Itoa(m.N), Trend: trend(m)}
	if m.Kind == "binary" {
		c.Baseline = fixed(m.Baseline*100, 1, false) + "%"
		c.Candidate = fixed(m.Candidate*100, 1, false) + "%"
		c.Effect = fixed(m.Effect*100, 1, true) + "pp"
		c.CILow = fixed(m.CILow*100, 1, true) + "pp"
		c.CIHigh = fixed(m.CIHigh*100, 1, true) + "pp"
	} else {
		d := decimals(m)
		c.Baseline = fixed(m.Baseline, d, false)
		c.Candidate = fixed(m.Candidate, d, false)
		c.Effect = fixed(m.Effect, d, true)
		c.CILow = fixed(m.CILow, d, true)
		c.CIHigh = fixed(m.CIHigh, d, true)
	}
	c.CI = "[" + c.CILow + ", " + c.CIHigh + "]"
	c.P = pValue(m.P)
	return c
}

// decimals is the number of decimals that gives the larger of a continuous
// metric's baseline and candidate three significant digits (0 to 6).
func decimals(m sdk.Metric) int {
	scale := max(math.Abs(round6(m.Baseline)), math.Abs(round6(m.Candidate)))
	if !finite(scale) || scale == 0 {
		scale = max(math.Abs(round6(m.CILow)), math.Abs(round6(m.CIHigh)), math.Abs(round6(m.Effect)))
	}
	if !finite(scale) || scale == 0 {
		return 3
	}
	d := 2 - int(math.Floor(math.Log10(scale)))
	return min(max(d, 0), 6)
}

// fixed formats v with d decimals, after rounding to sigDigits; signed adds
// "+" to positive values. A value that shows as zero has no sign, so noise
// around zero never prints as "-0.000".
func fixed(v float64, d int, signed bool) string {
	v = round6(v)
	if !finite(v) {
		return "n/a"
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.Trim(s, "-0.") == "" {
		return strings.TrimPrefix(s, "-")
	}
	if signed && v > 0 {
		s = "+" + s
	}
	return s
}

// pValue formats a p-value with three decimals, or "<0.001".
func pValue(p float64) string {
	p = round6(p)
	switch {
	case !finite(p):
		return "n/a"
	case p < 0.001:
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

// percent formats a fraction as a percentage with one decimal.
func percent(v float64) string { return fixed(v*100, 1, false) + "%" }

// general formats a gate metric: six significant digits, no exponent for
// ordinary magnitudes.
func general(v float64) string {
	v = round6(v)
	if !finite(v) {
		return "n/a"
	}
	if a := math.Abs(v); a == 0 || (a >= 1e-4 && a < 1e15) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// gateMetrics renders a gate's metrics as "k=v, k=v", sorted by key.
func gateMetrics(m map[string]float64) string {
	keys := sortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%s", k, general(m[k]))
	}
	return strings.Join(parts, ", ")
}
