package evolve

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/sextant-dev/sextant/sdk"
)

// Estimate is one paired comparison of a metric over the same n tasks.
type Estimate struct {
	N int
	// Baseline and Candidate are the means over the n tasks (for a pass/fail
	// metric, the pass rates).
	Baseline, Candidate float64
	// Effect is the mean paired difference, candidate − baseline (equal to
	// Candidate − Baseline up to rounding).
	Effect float64
	// CILow and CIHigh are the bootstrap percentile interval of Effect at
	// Confidence.
	CILow, CIHigh float64
	Confidence    float64
	// P is the two-sided p-value of "no difference".
	P float64
}

// BinaryEstimate is an Estimate of a pass/fail metric with its discordant
// pairs.
type BinaryEstimate struct {
	Estimate
	// Lost counts tasks that passed under the baseline and fail under the
	// candidate (McNemar's b); Gained the reverse (c).
	Lost, Gained int
}

// McNemar returns the p-value of McNemar's exact test for b pairs
// discordant one way and c the other: the two-sided binomial test of
// b ~ Binomial(b+c, 1/2), p = min(1, 2·P(X ≤ min(b, c))). With no
// discordant pairs there is no evidence of a difference and p is 1.
//
// For b=10, c=2: p = 2·(1+12+66)/4096 ≈ 0.0386.
func McNemar(b, c int) float64 {
	if b < 0 || c < 0 {
		panic(fmt.Sprintf("evolve: McNemar(%d, %d): negative count", b, c))
	}
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	return min(1, 2*distuv.Binomial{N: float64(n), P: 0.5}.CDF(float64(k)))
}

// PairedBinary compares pass/fail outcomes of the same tasks: base[i] and
// cand[i] are task i under the baseline and the candidate. P is McNemar's
// exact test; the interval is a paired bootstrap of the difference in pass
// rates (task indices resampled with replacement, percentile interval).
// The slices must have the same length.
func PairedBinary(base, cand []bool, opts Options) BinaryEstimate {
	if len(base) != len(cand) {
		panic(fmt.Sprintf("evolve: PairedBinary: %d baseline and %d candidate outcomes", len(base), len(cand)))
	}
	opts = opts.withDefaults()
	d := make([]float64, len(base))
	var e BinaryEstimate
	for i := range base {
		d[i] = indicator(cand[i]) - indicator(base[i])
		e.Baseline += indicator(base[i])
		e.Candidate += indicator(cand[i])
		switch {
		case base[i] && !cand[i]:
			e.Lost++
		case !base[i] && cand[i]:
			e.Gained++
		}
	}
	reps := bootstrap(d, len(base), 1, opts)[0]
	e.Estimate = summarize(d, len(base), 1, 0, e.Baseline, e.Candidate, reps, opts.Confidence)
	e.P = McNemar(e.Lost, e.Gained)
	return e
}

// PairedContinuous compares a continuous metric over the same tasks:
// base[i] and cand[i] are task i under the baseline and the candidate. The
// interval is a paired bootstrap percentile interval of the mean
// difference. P is the bootstrap p-value
//
//	p = min(1, 2·(min(#{θ*ᵦ ≤ 0}, #{θ*ᵦ ≥ 0}) + 1) / (B + 1))
//
// over the B resampled mean differences θ*ᵦ: twice the share of resamples
// on the far side of zero, with the add-one correction so that p is never
// 0 from a finite number of resamples. It is the smallest α at which the
// (1−α) percentile interval would exclude 0, so p < 0.05 agrees with a 95 %
// interval that excludes 0 (up to the correction). When every difference
// is 0, p is 1; when every difference is the same non-zero value, p is
// 2/(B+1).
func PairedContinuous(base, cand []float64, opts Options) Estimate {
	if len(base) != len(cand) {
		panic(fmt.Sprintf("evolve: PairedContinuous: %d baseline and %d candidate values", len(base), len(cand)))
	}
	opts = opts.withDefaults()
	d := make([]float64, len(base))
	var sb, sc float64
	for i := range base {
		d[i] = cand[i] - base[i]
		sb += base[i]
		sc += cand[i]
	}
	reps := bootstrap(d, len(base), 1, opts)[0]
	return summarize(d, len(base), 1, 0, sb, sc, reps, opts.Confidence)
}

// Flips lists the tasks whose success changed: regressed passed under the
// baseline and fail under the candidate, improved the reverse. Both are
// sorted.
func Flips(tasks []sdk.TaskOutcome) (regressed, improved []string) {
	for _, t := range tasks {
		switch {
		case t.Baseline.Success && !t.Candidate.Success:
			regressed = append(regressed, t.Task)
		case !t.Baseline.Success && t.Candidate.Success:
			improved = append(improved, t.Task)
		}
	}
	slices.Sort(regressed)
	slices.Sort(improved)
	return regressed, improved
}

func indicator(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// summarize builds the estimate of metric k from the task-major matrix d
// (n tasks × m metrics), the sums of the baseline and candidate values and
// the metric's sorted resampled means.
func summarize(d []float64, n, m, k int, sumBase, sumCand float64, reps []float64, conf float64) Estimate {
	e := Estimate{N: n, Confidence: conf, P: 1}
	if n == 0 {
		return e
	}
	var s float64
	for i := range n {
		s += d[i*m+k]
	}
	e.Baseline = sumBase / float64(n)
	e.Candidate = sumCand / float64(n)
	e.Effect = s / float64(n)
	alpha := 1 - conf
	e.CILow = quantile(reps, alpha/2)
	e.CIHigh = quantile(reps, 1-alpha/2)
	e.P = bootstrapP(reps)
	return e
}

// bootstrapStream is the PCG stream the bootstrap draws from; the seed
// picks the state. Fixed so that a seed means the same resamples forever.
const bootstrapStream = 0x73657874616e74 // "sextant"

// bootstrap resamples task indices with replacement opts.Resamples times
// and returns, for each of the m metrics of the task-major matrix d (n
// tasks × m metrics), the resampled mean differences, sorted. All metrics
// share the same resampled indices, so computing one metric alone gives
// the same numbers as computing it with the others.
//
// Indices are drawn from PCG's raw output with Lemire's multiply-shift
// method rather than rand.IntN, so the sequence depends only on PCG (a
// fixed algorithm), not on how a Go release maps random bits to ranges.
func bootstrap(d []float64, n, m int, opts Options) [][]float64 {
	out := make([][]float64, m)
	if n == 0 {
		return out
	}
	for k := range out {
		out[k] = make([]float64, opts.Resamples)
	}
	src := rand.NewPCG(opts.Seed, bootstrapStream)
	sums := make([]float64, m)
	for r := range opts.Resamples {
		clear(sums)
		for range n {
			row := d[int(below(src, uint64(n)))*m:]
			for k := range sums {
				sums[k] += row[k]
			}
		}
		for k, s := range sums {
			out[k][r] = s / float64(n)
		}
	}
	for _, reps := range out {
		slices.Sort(reps)
	}
	return out
}

// below returns a uniform integer in [0, n) (Lemire, "Fast random integer
// generation in an interval", 2019).
func below(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// quantile is the q-quantile of sorted xs, interpolating linearly between
// order statistics (Hyndman & Fan type 7, R's default).
func quantile(xs []float64, q float64) float64 {
	h := float64(len(xs)-1) * q
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (h-lo)*(xs[i+1]-xs[i])
}

// bootstrapP is the two-sided bootstrap p-value of PairedContinuous.
func bootstrapP(sorted []float64) float64 {
	b := len(sorted)
	le := sort.SearchFloat64s(sorted, math.Nextafter(0, 1)) // #{x ≤ 0}
	ge := b - sort.SearchFloat64s(sorted, 0)                // #{x ≥ 0}
	return min(1, 2*float64(min(le, ge)+1)/float64(b+1))
}
