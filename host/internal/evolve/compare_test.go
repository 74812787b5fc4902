package evolve

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

func TestCompare(t *testing.T) {
	b := baseline()
	c := candidate(b, t0.Add(8*24*time.Hour), map[string]float64{"response_speed": 0.8})
	tasks := outcomes(14, 4, 1, 1)
	tasks[3].Candidate.Violations = 2
	cmp := Compare(b, c, tasks, 0.9, Options{Seed: 1})

	if !reflect.DeepEqual(cmp.Baseline, b.Ref()) || !reflect.DeepEqual(cmp.Candidate, c.Ref()) {
		t.Error("refs are not strategy.Ref()")
	}
	if !reflect.DeepEqual(cmp.Diff, strategy.Diff(b, c).SDK()) {
		t.Errorf("diff = %+v", cmp.Diff)
	}
	if cmp.Fidelity != 0.9 || cmp.Config != nil || len(cmp.Tasks) != 20 {
		t.Errorf("fidelity %v, config %v, %d tasks", cmp.Fidelity, cmp.Config, len(cmp.Tasks))
	}

	names := make([]string, len(cmp.Metrics))
	for i, m := range cmp.Metrics {
		names[i] = m.Name
	}
	if !slices.Equal(names, MetricNames()) {
		t.Fatalf("metrics %v, want %v", names, MetricNames())
	}
	type row struct {
		kind               string
		higher             bool
		base, cand, effect float64
		lo, hi, p          float64
		exactCI, exactP    bool
	}
	want := map[string]row{
		MetricSuccessRate:   {kind: KindBinary, higher: true, base: 0.75, cand: 0.75, effect: 0, p: 1, exactP: true},
		MetricViolationFree: {kind: KindBinary, higher: true, base: 1, cand: 0.95, effect: -0.05, p: 1, exactP: true},
		MetricReward:        {kind: KindContinuous, higher: true, base: 0.75, cand: 0.75, effect: 0},
		MetricViolations:    {kind: KindContinuous, base: 0, cand: 0.1, effect: 0.1},
		MetricConfirmations: {kind: KindContinuous, effect: 0, lo: 0, hi: 0, p: 1, exactCI: true, exactP: true},
		MetricSteps:         {kind: KindContinuous, base: 10, cand: 9, effect: -1, lo: -1, hi: -1, p: 2.0 / 2001, exactCI: true, exactP: true},
		MetricTokens:        {kind: KindContinuous, base: 1000, cand: 900, effect: -100, lo: -100, hi: -100, p: 2.0 / 2001, exactCI: true, exactP: true},
		MetricCostUSD:       {kind: KindContinuous, base: 0.01, cand: 0.009, effect: -0.001},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	for _, m := range cmp.Metrics {
		w := want[m.Name]
		if m.Kind != w.kind || m.HigherIsBetter != w.higher || m.N != 20 || m.Confidence != 0.95 {
			t.Errorf("%s: kind %s, higher %v, n %d, confidence %v", m.Name, m.Kind, m.HigherIsBetter, m.N, m.Confidence)
		}
		if !near(m.Baseline, w.base) || !near(m.Candidate, w.cand) || !near(m.Effect, w.effect) {
			t.Errorf("%s: %v -> %v (effect %v), want %v -> %v (%v)", m.Name, m.Baseline, m.Candidate, m.Effect, w.base, w.cand, w.effect)
		}
		if !near(m.Effect, m.Candidate-m.Baseline) {
			t.Errorf("%s: effect %v is not candidate - baseline %v", m.Name, m.Effect, m.Candidate-m.Baseline)
		}
		if m.CILow > m.Effect+1e-12 || m.CIHigh < m.Effect-1e-12 {
			t.Errorf("%s: CI [%v, %v] misses the effect %v", m.Name, m.CILow, m.CIHigh, m.Effect)
		}
		if w.exactCI && (!near(m.CILow, w.lo) || !near(m.CIHigh, w.hi)) {
			t.Errorf("%s: CI [%v, %v], want [%v, %v]", m.Name, m.CILow, m.CIHigh, w.lo, w.hi)
		}
		if w.exactP && !near(m.P, w.p) {
			t.Errorf("%s: p = %v, want %v", m.Name, m.P, w.p)
		}
	}
}

// TestCompareMatchesPairedFunctions: the joint computation gives, bit for
// bit, what PairedBinary and PairedContinuous give one metric at a time.
func TestCompareMatchesPairedFunctions(t *testing.T) {
	b := baseline()
	r := rand.New(rand.NewPCG(3, 4))
	var tasks []sdk.TaskOutcome
	for i := range 57 {
		res := func() sdk.TaskResult {
			return sdk.TaskResult{Success: r.IntN(3) > 0, Reward: r.Float64(), Violations: r.IntN(2), Tokens: 500 + r.IntN(1000), CostUSD: r.Float64() / 100}
		}
		tasks = append(tasks, sdk.TaskOutcome{Task: string(rune('a'+i%26)) + string(rune('a'+i/26)), Baseline: res(), Candidate: res()})
	}
	opts := Options{Seed: 77, Resamples: 700, Confidence: 0.9}
	cmp := Compare(b, b, tasks, 1, opts)
	sorted := sortTasks(tasks)
	var bs, cs []bool
	var bt, ct []float64
	for _, t := range sorted {
		bs, cs = append(bs, t.Baseline.Success), append(cs, t.Candidate.Success)
		bt, ct = append(bt, float64(t.Baseline.Tokens)), append(ct, float64(t.Candidate.Tokens))
	}
	sr, tok := cmp.Metrics[0], cmp.Metrics[6]
	be := PairedBinary(bs, cs, opts)
	te := PairedContinuous(bt, ct, opts)
	if sr.CILow != be.CILow || sr.CIHigh != be.CIHigh || sr.P != be.P || sr.Effect != be.Effect {
		t.Errorf("success_rate %+v, PairedBinary %+v", sr, be)
	}
	if tok.CILow != te.CILow || tok.CIHigh != te.CIHigh || tok.P != te.P || tok.Effect != te.Effect {
		t.Errorf("tokens %+v, PairedContinuous %+v", tok, te)
	}
}

// TestCompareIgnoresTaskOrder: replay workers finish in any order; the
// comparison is the same.
func TestCompareIgnoresTaskOrder(t *testing.T) {
	b := baseline()
	c := candidate(b, t0, nil)
	tasks := outcomes(60, 20, 12, 8)
	for i := range tasks {
		tasks[i].Candidate.Tokens += i * 7 % 13
	}
	want := Compare(b, c, tasks, 1, Options{Seed: 2})
	shuffled := slices.Clone(tasks)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if got := Compare(b, c, shuffled, 1, Options{Seed: 2}); !reflect.DeepEqual(got, want) {
		t.Error("shuffling the tasks changed the comparison")
	}
	if !slices.IsSortedFunc(want.Tasks, func(a, b sdk.TaskOutcome) int { return cmpStrings(a.Task, b.Task) }) {
		t.Error("tasks are not sorted by id")
	}
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestCompareNoTasks(t *testing.T) {
	b := baseline()
	cmp := Compare(b, b, nil, 1, Options{})
	for _, m := range cmp.Metrics {
		if m.N != 0 || m.P != 1 || m.Effect != 0 || m.CILow != 0 || m.CIHigh != 0 || m.Baseline != 0 {
			t.Errorf("%s with no tasks: %+v", m.Name, m)
		}
	}
}

func TestCompareInvalidOptionsPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != "evolve: invalid options: resamples -5 is negative" {
			t.Errorf("recover() = %v", r)
		}
	}()
	b := baseline()
	Compare(b, b, nil, 1, Options{Resamples: -5})
}
