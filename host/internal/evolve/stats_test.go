package evolve

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// exactMcNemar computes 2·P(X ≤ min(b,c)), X ~ Binomial(b+c, 1/2), with
// exact rational arithmetic.
func exactMcNemar(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	sum := new(big.Int)
	for k := 0; k <= min(b, c); k++ {
		sum.Add(sum, new(big.Int).Binomial(int64(n), int64(k)))
	}
	p := new(big.Rat).SetFrac(new(big.Int).Mul(sum, big.NewInt(2)), new(big.Int).Lsh(big.NewInt(1), uint(n)))
	f, _ := p.Float64()
	return min(1, f)
}

func TestMcNemar(t *testing.T) {
	for _, tc := range []struct {
		name string
		b, c int
		want float64
	}{
		{"b10 c2", 10, 2, 79.0 / 2048}, // 2·(1+12+66)/4096 ≈ 0.0386
		{"symmetric", 2, 10, 79.0 / 2048},
		{"no discordant pairs", 0, 0, 1},
		{"balanced", 5, 5, 1},
		{"one pair", 1, 0, 1},
		{"all one way 5", 0, 5, 2.0 / 32},
		{"all one way 10", 10, 0, 2.0 / 1024},
		{"b3 c7", 3, 7, 2 * 176.0 / 1024},
		{"b25 c10", 25, 10, exactMcNemar(25, 10)},
		{"large", 200, 150, exactMcNemar(200, 150)},
		{"large balanced", 500, 499, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := McNemar(tc.b, tc.c)
			if math.Abs(got-tc.want) > 1e-12*max(1, tc.want) && math.Abs(got-tc.want)/tc.want > 1e-9 {
				t.Errorf("McNemar(%d, %d) = %.15g, want %.15g", tc.b, tc.c, got, tc.want)
			}
		})
	}
	if got := McNemar(10, 2); math.Abs(got-0.0386) > 0.0001 {
		t.Errorf("McNemar(10, 2) = %v, want ≈ 0.0386", got)
	}
}

func TestMcNemarNegativePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "negative count") {
			t.Errorf("recover() = %v", r)
		}
	}()
	McNemar(-1, 2)
}

// pairs builds paired outcomes: bothPass, bothFail, lost (pass→fail) and
// gained (fail→pass) tasks.
func pairs(bothPass, bothFail, lost, gained int) (base, cand []bool) {
	add := func(n int, b, c bool) {
		for range n {
			base = append(base, b)
			cand = append(cand, c)
		}
	}
	add(bothPass, true, true)
	add(bothFail, false, false)
	add(lost, true, false)
	add(gained, false, true)
	return base, cand
}

func TestPairedBinary(t *testing.T) {
	base, cand := pairs(70, 18, 10, 2)
	e := PairedBinary(base, cand, Options{Seed: 1})
	if e.N != 100 || e.Lost != 10 || e.Gained != 2 {
		t.Fatalf("n, lost, gained = %d, %d, %d", e.N, e.Lost, e.Gained)
	}
	if e.Baseline != 0.80 || e.Candidate != 0.72 {
		t.Errorf("rates = %v, %v; want 0.80, 0.72", e.Baseline, e.Candidate)
	}
	if math.Abs(e.Effect-(-0.08)) > 1e-15 {
		t.Errorf("effect = %v, want -0.08", e.Effect)
	}
	if e.P != McNemar(10, 2) {
		t.Errorf("p = %v, want McNemar(10, 2) = %v", e.P, McNemar(10, 2))
	}
	if !(e.CILow < e.Effect && e.Effect < e.CIHigh && e.CIHigh < 0) {
		t.Errorf("CI [%v, %v] should hold %v and lie below 0 (p=%.3f)", e.CILow, e.CIHigh, e.Effect, e.P)
	}
	if e.Confidence != 0.95 {
		t.Errorf("confidence = %v, want the default 0.95", e.Confidence)
	}
}

func TestPairedEdgeCases(t *testing.T) {
	t.Run("no tasks", func(t *testing.T) {
		want := BinaryEstimate{Estimate: Estimate{Confidence: 0.95, P: 1}}
		if got := PairedBinary(nil, nil, Options{}); got != want {
			t.Errorf("PairedBinary(nil) = %+v", got)
		}
		if got := PairedContinuous(nil, nil, Options{}); got != want.Estimate {
			t.Errorf("PairedContinuous(nil) = %+v", got)
		}
	})
	t.Run("all ties", func(t *testing.T) {
		base, cand := pairs(30, 20, 0, 0)
		e := PairedBinary(base, cand, Options{})
		if e.Effect != 0 || e.CILow != 0 || e.CIHigh != 0 || e.P != 1 || e.Baseline != 0.6 {
			t.Errorf("all ties: %+v", e)
		}
	})
	t.Run("one task", func(t *testing.T) {
		e := PairedBinary([]bool{true}, []bool{false}, Options{})
		if e.Effect != -1 || e.CILow != -1 || e.CIHigh != -1 || e.P != 1 {
			t.Errorf("one lost task: %+v", e)
		}
	})
	t.Run("zero variance, no change", func(t *testing.T) {
		x := []float64{3, 3, 5, 7}
		e := PairedContinuous(x, x, Options{})
		if e.Effect != 0 || e.CILow != 0 || e.CIHigh != 0 || e.P != 1 || e.Baseline != 4.5 {
			t.Errorf("identical: %+v", e)
		}
	})
	t.Run("zero variance, constant change", func(t *testing.T) {
		base := []float64{100, 200, 300, 400}
		cand := []float64{90, 190, 290, 390}
		e := PairedContinuous(base, cand, Options{Resamples: 999})
		if e.Effect != -10 || e.CILow != -10 || e.CIHigh != -10 {
			t.Errorf("constant -10: %+v", e)
		}
		if e.P != 2.0/1000 {
			t.Errorf("p = %v, want 2/(B+1) = 0.002", e.P)
		}
	})
}

func TestPairedLengthMismatchPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "1 baseline and 2 candidate") {
			t.Errorf("recover() = %v", r)
		}
	}()
	PairedContinuous([]float64{1}, []float64{1, 2}, Options{})
}

// noisy returns n paired values whose differences have mean shift.
func noisy(n int, shift float64, seed uint64) (base, cand []float64) {
	r := rand.New(rand.NewPCG(seed, 1))
	for range n {
		b := 100 + 20*r.NormFloat64()
		base = append(base, b)
		cand = append(cand, b+shift+5*r.NormFloat64())
	}
	return base, cand
}

func TestBootstrapDeterministicBySeed(t *testing.T) {
	base, cand := noisy(150, 1, 7)
	a := PairedContinuous(base, cand, Options{Seed: 42})
	b := PairedContinuous(base, cand, Options{Seed: 42})
	if math.Float64bits(a.CILow) != math.Float64bits(b.CILow) || math.Float64bits(a.CIHigh) != math.Float64bits(b.CIHigh) || a.P != b.P {
		t.Fatalf("same seed, different results: %+v vs %+v", a, b)
	}
	differs := false
	for seed := uint64(43); seed < 46; seed++ {
		c := PairedContinuous(base, cand, Options{Seed: seed})
		differs = differs || c.CILow != a.CILow || c.CIHigh != a.CIHigh
	}
	if !differs {
		t.Error("the seed does not change the resamples")
	}

	bb, bc := pairs(60, 20, 12, 8)
	x := PairedBinary(bb, bc, Options{Seed: 9})
	y := PairedBinary(bb, bc, Options{Seed: 9})
	if x != y {
		t.Errorf("binary: same seed, different results: %+v vs %+v", x, y)
	}
}

// TestBootstrapGolden pins the resamples of a seed: a change here means
// every stored comparison would be computed differently.
func TestBootstrapGolden(t *testing.T) {
	base, cand := pairs(60, 20, 12, 8)
	e := PairedBinary(base, cand, Options{Seed: 1})
	got := []float64{e.CILow, e.CIHigh}
	want := []float64{-0.13, 0.05}
	if !slices.Equal(got, want) {
		t.Errorf("seed 1 CI = %v, want %v", got, want)
	}
}

func TestBootstrapProperties(t *testing.T) {
	t.Run("contains the effect", func(t *testing.T) {
		for seed := range uint64(20) {
			base, cand := noisy(80, float64(seed)-10, seed)
			e := PairedContinuous(base, cand, Options{Seed: seed})
			if !(e.CILow <= e.Effect && e.Effect <= e.CIHigh) {
				t.Errorf("seed %d: %v outside [%v, %v]", seed, e.Effect, e.CILow, e.CIHigh)
			}
		}
	})
	t.Run("shrinks with n", func(t *testing.T) {
		prev := math.Inf(1)
		for _, k := range []int{1, 4, 16} {
			base, cand := pairs(30*k, 10*k, 6*k, 4*k)
			e := PairedBinary(base, cand, Options{Seed: 3})
			w := e.CIHigh - e.CILow
			if w >= prev {
				t.Errorf("n=%d: width %v not below %v", e.N, w, prev)
			}
			prev = w
		}
		// Quadrupling n roughly halves the width.
		b1, c1 := noisy(100, 0, 5)
		b4, c4 := noisy(400, 0, 5)
		w1 := width(PairedContinuous(b1, c1, Options{}))
		w4 := width(PairedContinuous(b4, c4, Options{}))
		if r := w4 / w1; r < 0.35 || r > 0.65 {
			t.Errorf("width ratio n=400/n=100 = %.2f, want ≈ 0.5", r)
		}
	})
	t.Run("wider at higher confidence", func(t *testing.T) {
		base, cand := noisy(100, 0.5, 11)
		w90 := width(PairedContinuous(base, cand, Options{Confidence: 0.90}))
		w99 := width(PairedContinuous(base, cand, Options{Confidence: 0.99}))
		if w99 <= w90 {
			t.Errorf("99%% width %v not above 90%% width %v", w99, w90)
		}
	})
	t.Run("coverage", func(t *testing.T) {
		// Over 200 datasets with a true mean difference of 2, the 95%
		// interval should hold 2 about 95% of the time.
		covered := 0
		const trials = 200
		for seed := range uint64(trials) {
			base, cand := noisy(60, 2, 1000+seed)
			e := PairedContinuous(base, cand, Options{Seed: seed, Resamples: 500})
			if e.CILow <= 2 && 2 <= e.CIHigh {
				covered++
			}
		}
		if rate := float64(covered) / trials; rate < 0.88 || rate > 0.99 {
			t.Errorf("coverage %.3f, want ≈ 0.95", rate)
		}
	})
	t.Run("p agrees with the interval", func(t *testing.T) {
		for seed := range uint64(30) {
			base, cand := noisy(50, float64(seed%6)*0.4, 500+seed)
			e := PairedContinuous(base, cand, Options{Seed: seed})
			excludes := e.CILow > 0 || e.CIHigh < 0
			if excludes && e.P > 0.05+2.0/2001 {
				t.Errorf("seed %d: CI [%v, %v] excludes 0 but p = %v", seed, e.CILow, e.CIHigh, e.P)
			}
			if !excludes && e.P < 0.05-2.0/2001 {
				t.Errorf("seed %d: CI [%v, %v] holds 0 but p = %v", seed, e.CILow, e.CIHigh, e.P)
			}
		}
	})
	t.Run("p is small for a clear effect and large for none", func(t *testing.T) {
		base, cand := noisy(200, 3, 21)
		if p := PairedContinuous(base, cand, Options{}).P; p > 0.001 {
			t.Errorf("shift 3: p = %v", p)
		}
		x, _ := noisy(200, 0, 22)
		y, _ := noisy(200, 0, 23)
		if p := PairedContinuous(x, y, Options{}).P; p < 0.05 {
			t.Errorf("no shift: p = %v", p)
		}
	})
}

func width(e Estimate) float64 { return e.CIHigh - e.CILow }

func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	for _, tc := range []struct{ q, want float64 }{
		{0, 1}, {1, 5}, {0.5, 3}, {0.25, 2}, {0.1, 1.4}, {0.975, 4.9},
	} {
		if got := quantile(xs, tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestBelowIsUniform(t *testing.T) {
	src := rand.NewPCG(1, 2)
	var counts [7]int
	for range 70000 {
		counts[below(src, 7)]++
	}
	for i, c := range counts {
		if c < 9500 || c > 10500 {
			t.Errorf("value %d drawn %d times of 70000", i, c)
		}
	}
}

func TestFlips(t *testing.T) {
	pass, fail := sdk.TaskResult{Success: true}, sdk.TaskResult{}
	tasks := []sdk.TaskOutcome{
		{Task: "t3", Baseline: pass, Candidate: fail},
		{Task: "t1", Baseline: fail, Candidate: pass},
		{Task: "t2", Baseline: pass, Candidate: pass},
		{Task: "t0", Baseline: pass, Candidate: fail},
		{Task: "t4", Baseline: fail, Candidate: fail},
	}
	reg, imp := Flips(tasks)
	if !slices.Equal(reg, []string{"t0", "t3"}) || !slices.Equal(imp, []string{"t1"}) {
		t.Errorf("Flips = %v, %v", reg, imp)
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"zero", Options{}, ""},
		{"set", Options{Confidence: 0.9, Resamples: 10, Seed: 3}, ""},
		{"confidence 1", Options{Confidence: 1}, "confidence 1 is not in (0, 1)"},
		{"negative confidence", Options{Confidence: -0.5}, "confidence -0.5 is not in (0, 1)"},
		{"NaN confidence", Options{Confidence: math.NaN()}, "confidence NaN is not in (0, 1)"},
		{"negative resamples", Options{Resamples: -1}, "resamples -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if got := errText(err); got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
	got := Options{}.withDefaults()
	if got != (Options{Confidence: 0.95, Resamples: 2000}) {
		t.Errorf("defaults = %+v", got)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
