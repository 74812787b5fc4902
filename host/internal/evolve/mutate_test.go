package evolve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

var tEvolve = t0.Add(10 * 24 * time.Hour) // after the baseline's 7-day cooldown

// probeMetric is a handcrafted probe result: the effect on the metric
// with a CI around it.
func probeMetric(name string, effect float64, higherIsBetter bool) sdk.Metric {
	return sdk.Metric{Name: name, Kind: KindBinary, Effect: effect, CILow: effect - 0.025, CIHigh: effect + 0.03,
		Confidence: 0.95, P: 0.004, N: 200, HigherIsBetter: higherIsBetter}
}

// fakeProbe answers probes from effects keyed by the probe's parameter
// moves ("response_speed=0.85", several joined by ","); unlisted moves have
// effect 0. It records the keys it was asked, in order.
type fakeProbe struct {
	base    *strategy.Strategy
	metric  string
	lower   bool // the metric is lower-is-better
	effects map[string]float64
	errs    map[string]error

	mu    sync.Mutex
	asked []string
	seen  []*strategy.Strategy
}

func (f *fakeProbe) probe(_ context.Context, cand *strategy.Strategy) (*sdk.Comparison, error) {
	var moves []string
	for _, p := range strategy.Diff(f.base, cand).Parameters {
		moves = append(moves, fmt.Sprintf("%s=%s", p.Name, num(p.To)))
	}
	key := strings.Join(moves, ",")
	f.mu.Lock()
	f.asked = append(f.asked, key)
	f.seen = append(f.seen, cand)
	f.mu.Unlock()
	if err := f.errs[key]; err != nil {
		return nil, err
	}
	name := f.metric
	if name == "" {
		name = MetricSuccessRate
	}
	return &sdk.Comparison{Metrics: []sdk.Metric{
		probeMetric(MetricViolationFree, 0, true),
		probeMetric(name, f.effects[key], !f.lower),
	}}, nil
}

func changes(s *strategy.Strategy) []string {
	var out []string
	e := s.ChangeLog[len(s.ChangeLog)-1]
	for _, c := range e.Changes {
		out = append(out, fmt.Sprintf("%s %s→%s: %s", c.Parameter, num(c.From), num(c.To), c.Reason))
	}
	return out
}

func TestStepMutators(t *testing.T) {
	bounded := func() *strategy.Strategy {
		b := baseline()
		b.Parameters["response_speed"] = 0.97
		b.Parameters["max_retries"] = 3
		b.ParameterBounds = map[string]strategy.Bounds{"max_retries": {Lo: 0, Hi: 5}}
		return b
	}
	tests := []struct {
		name    string
		mutator func(MutateOptions) (Mutator, error)
		base    func() *strategy.Strategy
		metric  string
		lower   bool
		effects map[string]float64
		asked   []string
		want    []string // changes of the one candidate; nil: no candidate
	}{
		{
			name: "greedy moves each improving parameter a full step", mutator: Greedy, base: baseline,
			effects: map[string]float64{"response_speed=0.85": 0.045, "response_speed=0.65": -0.02, "user_confirmation=0.5": 0.03, "autonomy_level=0.8": -0.01},
			asked:   []string{"autonomy_level=0.8", "autonomy_level=0.6", "response_speed=0.85", "response_speed=0.65", "user_confirmation=0.7", "user_confirmation=0.5"},
			want: []string{
				"response_speed 0.75→0.85: replay: success_rate +0.045 [0.020, 0.075], p=0.004, n=200 (probe 0.75→0.85)",
				"user_confirmation 0.6→0.5: replay: success_rate +0.030 [0.005, 0.060], p=0.004, n=200 (probe 0.6→0.5)",
			},
		},
		{
			name: "greedy takes the better of two improving directions", mutator: Greedy, base: baseline,
			effects: map[string]float64{"autonomy_level=0.8": 0.01, "autonomy_level=0.6": 0.02},
			want:    []string{"autonomy_level 0.7→0.6: replay: success_rate +0.020 [-0.005, 0.050], p=0.004, n=200 (probe 0.7→0.6)"},
		},
		{
			name: "equal gains both ways show no direction", mutator: Greedy, base: baseline,
			effects: map[string]float64{"autonomy_level=0.8": 0.02, "autonomy_level=0.6": 0.02},
		},
		{
			name: "nothing improves: no candidate", mutator: Greedy, base: baseline,
			effects: map[string]float64{"autonomy_level=0.8": -0.02, "response_speed=0.65": 0},
		},
		{
			name: "conservative moves half a step after full-step probes", mutator: Conservative, base: baseline,
			effects: map[string]float64{"response_speed=0.85": 0.045, "user_confirmation=0.5": 0.03},
			want: []string{
				"response_speed 0.75→0.8: replay: success_rate +0.045 [0.020, 0.075], p=0.004, n=200 (probe 0.75→0.85)",
				"user_confirmation 0.6→0.55: replay: success_rate +0.030 [0.005, 0.060], p=0.004, n=200 (probe 0.6→0.5)",
			},
		},
		{
			name: "steps are clipped to the bounds", mutator: Greedy, base: bounded,
			effects: map[string]float64{"response_speed=1": 0.01, "max_retries=3.1": 0.01},
			asked:   []string{"autonomy_level=0.8", "autonomy_level=0.6", "max_retries=3.1", "max_retries=2.9", "response_speed=1", "response_speed=0.87", "user_confirmation=0.7", "user_confirmation=0.5"},
			want: []string{
				"max_retries 3→3.1: replay: success_rate +0.010 [-0.015, 0.040], p=0.004, n=200 (probe 3→3.1)",
				"response_speed 0.97→1: replay: success_rate +0.010 [-0.015, 0.040], p=0.004, n=200 (probe 0.97→1)",
			},
		},
		{
			name: "conservative half steps are clipped too", mutator: Conservative, base: bounded,
			effects: map[string]float64{"response_speed=1": 0.01},
			want:    []string{"response_speed 0.97→1: replay: success_rate +0.010 [-0.015, 0.040], p=0.004, n=200 (probe 0.97→1)"},
		},
		{
			name: "a parameter at its bound is probed one way only", mutator: Greedy,
			base: func() *strategy.Strategy {
				b := baseline()
				b.Parameters = map[string]float64{"user_confirmation": 1}
				return b
			},
			asked: []string{"user_confirmation=0.9"},
		},
		{
			name: "lower is better: a fall is the improvement", mutator: Greedy, base: baseline, metric: MetricCostUSD, lower: true,
			effects: map[string]float64{"response_speed=0.85": -0.002, "user_confirmation=0.5": 0.003},
			want:    []string{"response_speed 0.75→0.85: replay: cost_usd -0.0020 [-0.0270, 0.0280], p=0.004, n=200 (probe 0.75→0.85)"},
		},
		{
			name: "no parameter may move", mutator: Greedy,
			base: func() *strategy.Strategy {
				b := baseline()
				b.Evolution.MaxParameterDelta = 0
				return b
			},
			asked: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.base()
			m, err := tt.mutator(MutateOptions{At: tEvolve, Metric: tt.metric})
			if err != nil {
				t.Fatal(err)
			}
			f := &fakeProbe{base: base, metric: tt.metric, lower: tt.lower, effects: tt.effects}
			got, err := m.Propose(context.Background(), base, f.probe)
			if err != nil && (!errors.Is(err, ErrNothingProposed) || len(tt.want) > 0) {
				t.Fatal(err)
			}
			if tt.asked != nil && !slices.Equal(f.asked, tt.asked) && !(len(tt.asked) == 0 && len(f.asked) == 0) {
				t.Errorf("probes = %q, want %q", f.asked, tt.asked)
			}
			for _, p := range f.seen {
				if p.Metadata.CreatedBy != "sextant evolve (probe)" || p.Evolution.BranchType != strategy.Experimental || len(strategy.Diff(base, p).Parameters) != 1 {
					t.Errorf("probe strategy %s by %q, branch %s, %d changes", p.Metadata.Version, p.Metadata.CreatedBy, p.Evolution.BranchType, len(strategy.Diff(base, p).Parameters))
				}
			}
			if tt.want == nil {
				if len(got) != 0 {
					t.Fatalf("got %d candidates, want none: %q", len(got), changes(got[0]))
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("got %d candidates, want 1", len(got))
			}
			c := got[0]
			if g := changes(c); !slices.Equal(g, tt.want) {
				t.Errorf("changes:\n got %q\nwant %q", g, tt.want)
			}
			md := c.Metadata
			if md.Version != "2.1.0" || md.ParentVersion != base.Metadata.Version || md.CreatedBy != "sextant evolve ("+m.Name()+")" || !md.CreatedAt.Equal(tEvolve) {
				t.Errorf("metadata = %+v", md)
			}
			if c.Evolution.BranchType != base.Evolution.BranchType {
				t.Errorf("branch type %s, want the baseline's %s", c.Evolution.BranchType, base.Evolution.BranchType)
			}
			if err := c.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

// The candidates a step mutator proposes are within the baseline's limits:
// the delta-bound gate passes them.
func TestStepMutatorsPassDeltaBound(t *testing.T) {
	base := baseline()
	base.Parameters["response_speed"] = 0.7
	f := &fakeProbe{base: base, effects: map[string]float64{"response_speed=0.8": 0.05, "user_confirmation=0.5": 0.05, "autonomy_level=0.6": 0.05}}
	for _, mk := range []func(MutateOptions) (Mutator, error){Greedy, Conservative} {
		m, _ := mk(MutateOptions{At: tEvolve})
		got, err := m.Propose(context.Background(), base, f.probe)
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v, %d candidates", m.Name(), err, len(got))
		}
		v, err := check(GateDeltaBound, Compare(base, got[0], outcomes(10, 0, 0, 0), 1, Options{Seed: 1}), nil)
		if err != nil || v.Ruling != sdk.Pass {
			t.Errorf("%s: delta-bound: %v %+v", m.Name(), err, v)
		}
	}
}

func TestStepMutatorErrors(t *testing.T) {
	base := baseline()
	tests := []struct {
		name  string
		probe Probe
		want  string
	}{
		{"no probe", nil, "greedy: no probe"},
		{"probe fails", (&fakeProbe{base: base, errs: map[string]error{"response_speed=0.65": errors.New("replay: no recordings")}}).probe,
			"greedy: probe response_speed 0.75→0.65: replay: no recordings"},
		{"no comparison", func(context.Context, *strategy.Strategy) (*sdk.Comparison, error) { return nil, nil },
			"greedy: probe autonomy_level 0.7→0.8: probe returned no comparison"},
		{"metric missing", func(context.Context, *strategy.Strategy) (*sdk.Comparison, error) {
			return &sdk.Comparison{Metrics: []sdk.Metric{{Name: MetricReward}, {Name: MetricSteps}}}, nil
		}, `greedy: probe autonomy_level 0.7→0.8: metric "success_rate" is not in the comparison (have reward, steps)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := Greedy(MutateOptions{At: tEvolve})
			got, err := m.Propose(context.Background(), base, tt.probe)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if got != nil {
				t.Errorf("candidates with an error: %d", len(got))
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		m, _ := Greedy(MutateOptions{At: tEvolve})
		_, err := m.Propose(ctx, base, (&fakeProbe{base: base}).probe)
		if !errors.Is(err, context.Canceled) || err.Error() != "greedy: probe autonomy_level 0.7→0.8: context canceled" {
			t.Errorf("err = %v", err)
		}
	})
}

func TestMutateOptions(t *testing.T) {
	tests := []struct {
		name string
		mk   func(MutateOptions) (Mutator, error)
		opts MutateOptions
		want string
	}{
		{"greedy without a time", Greedy, MutateOptions{}, "greedy: options: missing time (At)"},
		{"conservative metric misspelt", Conservative, MutateOptions{At: tEvolve, Metric: "sucess_rate"},
			`conservative: options: unknown metric "sucess_rate" (did you mean "success_rate"?) (want one of success_rate, violation_free_rate, reward, violations, confirmations, steps, tokens, cost_usd)`},
		{"exploratory without a time", Exploratory, MutateOptions{Seed: 3}, "exploratory: options: missing time (At)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := tt.mk(tt.opts)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if m != nil {
				t.Error("a mutator with an error")
			}
		})
	}
}

func TestExploratory(t *testing.T) {
	base := baseline()
	// Pinned: seed 7 moves autonomy_level down, response_speed up and
	// user_confirmation up (PCG's raw output, never rand.IntN's mapping).
	const moves = "autonomy_level=0.6,response_speed=0.85,user_confirmation=0.7"
	t.Run("improving probe", func(t *testing.T) {
		f := &fakeProbe{base: base, effects: map[string]float64{moves: 0.02}}
		m, _ := Exploratory(MutateOptions{At: tEvolve, Seed: 7})
		got, err := m.Propose(context.Background(), base, f.probe)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f.asked, []string{moves}) {
			t.Fatalf("probes = %q, want one of %q", f.asked, moves)
		}
		if len(got) != 1 {
			t.Fatalf("%d candidates, want 1", len(got))
		}
		const ev = "replay: success_rate +0.020 [-0.005, 0.050], p=0.004, n=200 (exploratory probe of 3 moves, seed 7)"
		want := []string{"autonomy_level 0.7→0.6: " + ev, "response_speed 0.75→0.85: " + ev, "user_confirmation 0.6→0.7: " + ev}
		if g := changes(got[0]); !slices.Equal(g, want) {
			t.Errorf("changes:\n got %q\nwant %q", g, want)
		}
		if got[0].Metadata.CreatedBy != "sextant evolve (exploratory)" {
			t.Errorf("created_by %q", got[0].Metadata.CreatedBy)
		}
	})
	t.Run("probe shows no gain", func(t *testing.T) {
		f := &fakeProbe{base: base, effects: map[string]float64{moves: 0}}
		m, _ := Exploratory(MutateOptions{At: tEvolve, Seed: 7})
		got, err := m.Propose(context.Background(), base, f.probe)
		if !errors.Is(err, ErrNothingProposed) || len(got) != 0 {
			t.Fatalf("got %d candidates, %v; want none and why", len(got), err)
		}
	})
	t.Run("seeds explore both directions", func(t *testing.T) {
		dirs := map[string]bool{}
		for seed := range uint64(16) {
			f := &fakeProbe{base: base}
			m, _ := Exploratory(MutateOptions{At: tEvolve, Seed: seed})
			if _, err := m.Propose(context.Background(), base, f.probe); err != nil && !errors.Is(err, ErrNothingProposed) {
				t.Fatal(err)
			}
			dirs[f.asked[0]] = true
		}
		if len(dirs) < 4 {
			t.Errorf("16 seeds gave only %d move sets: %v", len(dirs), dirs)
		}
	})
	t.Run("probe fails", func(t *testing.T) {
		f := &fakeProbe{base: base, errs: map[string]error{moves: errors.New("worker crashed")}}
		m, _ := Exploratory(MutateOptions{At: tEvolve, Seed: 7})
		_, err := m.Propose(context.Background(), base, f.probe)
		if err == nil || err.Error() != "exploratory: probe of 3 moves: worker crashed" {
			t.Errorf("err = %v", err)
		}
	})
}

// Mutators are functions of the baseline, the options and the probe
// answers: two runs give byte-identical candidates.
func TestMutatorsDeterministic(t *testing.T) {
	base := baseline()
	effects := map[string]float64{"response_speed=0.85": 0.045, "user_confirmation=0.5": 0.03, "autonomy_level=0.6,response_speed=0.85,user_confirmation=0.7": 0.01}
	run := func() [][]byte {
		var out [][]byte
		for _, mk := range []func(MutateOptions) (Mutator, error){Greedy, Conservative, Exploratory} {
			for seed := range uint64(8) {
				m, _ := mk(MutateOptions{At: tEvolve, Seed: seed})
				got, err := m.Propose(context.Background(), base, (&fakeProbe{base: base, effects: effects}).probe)
				if err != nil && !errors.Is(err, ErrNothingProposed) {
					t.Fatal(err)
				}
				for _, c := range got {
					out = append(out, c.Encode())
				}
			}
		}
		return out
	}
	a, b := run(), run()
	if len(a) == 0 || !slices.EqualFunc(a, b, bytes.Equal) {
		t.Fatalf("runs differ (%d vs %d candidates)", len(a), len(b))
	}
}

func TestMemoProbe(t *testing.T) {
	base := baseline()
	f := &fakeProbe{base: base, effects: map[string]float64{"response_speed=0.85": 0.045}}
	p := MemoProbe(f.probe)
	for _, mk := range []func(MutateOptions) (Mutator, error){Greedy, Conservative} {
		m, _ := mk(MutateOptions{At: tEvolve})
		if got, err := m.Propose(context.Background(), base, p); err != nil || len(got) != 1 {
			t.Fatalf("%s: %d candidates, %v", m.Name(), len(got), err)
		}
	}
	if len(f.asked) != 6 {
		t.Errorf("greedy and conservative replayed %d probes, want the 6 they share", len(f.asked))
	}

	t.Run("cancellation is not remembered", func(t *testing.T) {
		calls := 0
		p := MemoProbe(func(ctx context.Context, _ *strategy.Strategy) (*sdk.Comparison, error) {
			calls++
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return &sdk.Comparison{}, nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := p(ctx, base); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		if c, err := p(context.Background(), base); err != nil || c == nil || calls != 2 {
			t.Errorf("after a cancelled call: %v, %v, %d calls", c, err, calls)
		}
	})
	t.Run("a panicking probe does not hang the others", func(t *testing.T) {
		p := MemoProbe(func(context.Context, *strategy.Strategy) (*sdk.Comparison, error) { panic("boom") })
		func() {
			defer func() {
				if recover() == nil {
					t.Error("the panic was swallowed")
				}
			}()
			p(context.Background(), base)
		}()
		if _, err := p(context.Background(), base); err == nil || err.Error() != "probe panicked" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("concurrent calls share one replay", func(t *testing.T) {
		var mu sync.Mutex
		calls := 0
		p := MemoProbe(func(context.Context, *strategy.Strategy) (*sdk.Comparison, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			time.Sleep(time.Millisecond)
			return &sdk.Comparison{Fidelity: 1}, nil
		})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if c, err := p(context.Background(), base); err != nil || c.Fidelity != 1 {
					t.Errorf("%v %v", c, err)
				}
			})
		}
		wg.Wait()
		if calls != 1 {
			t.Errorf("%d replays, want 1", calls)
		}
	})
}
