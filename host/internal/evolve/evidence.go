package evolve

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// Reasons quote their evidence in one fixed format, so that people and
// tests read the same text:
//
//	success_rate -0.060 [-0.110, -0.015], p=0.012, n=200
//
// effect (signed), percentile interval, p-value and the number of paired
// tasks, with a number of decimals fixed per metric.

// evidence renders a metric's effect, interval, p and n.
func evidence(m sdk.Metric) string {
	dec := decimals(m.Name)
	return fmt.Sprintf("%s %s [%s, %s], %s, n=%d", m.Name, signed(m.Effect, dec), fixed(m.CILow, dec), fixed(m.CIHigh, dec), pValue(m.P), m.N)
}

// decimals is how many decimals reasons show for metric name.
func decimals(name string) int {
	if d, ok := lookupMetric(name); ok {
		return d.decimals
	}
	return 3
}

// fixed formats x with dec decimals, never as "-0.000".
func fixed(x float64, dec int) string {
	s := strconv.FormatFloat(x, 'f', dec, 64)
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s
}

// signed is fixed with a sign on non-zero values.
func signed(x float64, dec int) string {
	s := fixed(x, dec)
	if !strings.HasPrefix(s, "-") && strings.Trim(s, "0.") != "" {
		s = "+" + s
	}
	return s
}

func pValue(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return "p=" + strconv.FormatFloat(p, 'f', 3, 64)
}

// num formats a parameter value in its shortest form, rounded to hide
// float noise (0.75 - 0.7 is 0.05000000000000004).
func num(x float64) string {
	s := strconv.FormatFloat(math.Round(x*1e9)/1e9, 'f', -1, 64)
	if s == "-0" {
		s = "0"
	}
	return s
}

// signedNum is num with a sign on non-zero values.
func signedNum(x float64) string {
	s := num(x)
	if s != "0" && !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

func usd(x float64) string { return "$" + fixed(x, 4) }

// exceeds reports x > limit beyond float noise: a parameter moved by
// 0.8 − 0.7 = 0.10000000000000009 does not exceed a limit of 0.1.
func exceeds(x, limit float64) bool {
	return x > limit+1e-9*max(1, math.Abs(limit))
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
