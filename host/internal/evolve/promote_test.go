package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

var tPromote = tEvolve.Add(time.Hour)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), ".sextant"), store.NewConfig().WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// revise derives 2.1.0 from base as mutator, setting params.
func revise(t *testing.T, base *strategy.Strategy, mutator string, params map[string]float64) *strategy.Strategy {
	t.Helper()
	var sets []strategy.Set
	for _, k := range sortedParams(&strategy.Strategy{Parameters: params}) {
		sets = append(sets, strategy.Set{Parameter: k, To: params[k], Reason: "replay: success_rate +0.150 [0.100, 0.200], p<0.001, n=200"})
	}
	c, err := base.Revise(strategy.Revision{By: createdBy(mutator), At: tEvolve, Parameters: sets})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The gate chains of the tests: built-in gates, really run.
func chain(t *testing.T, review bool) []GateSpec {
	t.Helper()
	var specs []GateSpec
	add := func(name string, cfg map[string]any) {
		g, err := Builtin(name, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, GateSpec{Name: name, Gate: g, Config: cfg})
	}
	add(GateDeltaBound, nil)
	add(GateNoRegression, nil)
	add(GateImprovement, nil)
	if review {
		add(GateHumanReview, map[string]any{"when": "always"})
	}
	return specs
}

// evaluate replays nothing: tasks are handcrafted outcomes, compared and
// gated for real.
func evaluate(t *testing.T, base, cand *strategy.Strategy, mutator string, tasks []sdk.TaskOutcome, review bool) Evaluated {
	t.Helper()
	c := Compare(base, cand, tasks, 1, Options{Seed: 1})
	return Evaluated{Mutator: mutator, Strategy: cand, Comparison: c, Result: Evaluate(context.Background(), c, chain(t, review))}
}

var (
	improving = outcomes(150, 20, 0, 30) // +0.150
	smaller   = outcomes(160, 20, 0, 20) // +0.100
	regressed = outcomes(150, 20, 30, 0) // -0.150
)

// handmade is a candidate with a handcrafted comparison and ruling.
func handmade(t *testing.T, mutator string, params map[string]float64, ruling sdk.Ruling, metrics ...sdk.Metric) Evaluated {
	base := baseline()
	cand := revise(t, base, mutator, params)
	c := &sdk.Comparison{Baseline: base.Ref(), Candidate: cand.Ref(), Diff: strategy.Diff(base, cand).SDK(), Metrics: metrics}
	return Evaluated{Mutator: mutator, Strategy: cand, Comparison: c, Result: Result{Ruling: ruling}}
}

func TestSelect(t *testing.T) {
	sr := func(e float64) sdk.Metric { return probeMetric(MetricSuccessRate, e, true) }
	cost := func(e float64) sdk.Metric { return probeMetric(MetricCostUSD, e, false) }
	tests := []struct {
		name   string
		metric string
		cands  []Evaluated
		want   int // index of the winner, -1 for none
	}{
		{"largest gain among the passing", "", []Evaluated{
			handmade(t, "greedy", map[string]float64{"response_speed": 0.85}, sdk.Pass, sr(0.02)),
			handmade(t, "exploratory", map[string]float64{"response_speed": 0.65}, sdk.Fail, sr(0.09)),
			handmade(t, "conservative", map[string]float64{"response_speed": 0.8}, sdk.Pass, sr(0.04)),
			handmade(t, "curate", nil, sdk.Review, sr(0.08)),
		}, 2},
		{"a tie goes to the smaller change", MetricSuccessRate, []Evaluated{
			handmade(t, "greedy", map[string]float64{"response_speed": 0.85, "autonomy_level": 0.8}, sdk.Pass, sr(0.04)),
			handmade(t, "greedy", map[string]float64{"response_speed": 0.85}, sdk.Pass, sr(0.04)),
		}, 1},
		{"then to the mutator name", "", []Evaluated{
			handmade(t, "greedy", map[string]float64{"response_speed": 0.85}, sdk.Pass, sr(0.04)),
			handmade(t, "exploratory", map[string]float64{"response_speed": 0.65}, sdk.Pass, sr(0.04)),
		}, 1},
		{"lower is better", MetricCostUSD, []Evaluated{
			handmade(t, "greedy", map[string]float64{"response_speed": 0.85}, sdk.Pass, sr(0.1), cost(-0.001)),
			handmade(t, "conservative", map[string]float64{"response_speed": 0.8}, sdk.Pass, sr(0), cost(-0.003)),
		}, 1},
		{"passing is enough", "", []Evaluated{
			handmade(t, "greedy", map[string]float64{"response_speed": 0.85}, sdk.Pass, sr(-0.01)),
		}, 0},
		{"none passed", "", []Evaluated{
			handmade(t, "greedy", map[string]float64{"response_speed": 0.85}, sdk.Fail, sr(0.04)),
			handmade(t, "curate", nil, sdk.Review, sr(0.04)),
		}, -1},
		{"without the metric or a comparison, never", MetricReward, []Evaluated{
			handmade(t, "greedy", map[string]float64{"response_speed": 0.85}, sdk.Pass, sr(0.04)),
			{Mutator: "curate", Strategy: baseline(), Result: Result{Ruling: sdk.Pass}},
		}, -1},
		{"none at all", "", nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every order of the candidates gives the same winner.
			for _, perm := range permutations(len(tt.cands)) {
				cands := make([]Evaluated, len(perm))
				for i, j := range perm {
					cands[i] = tt.cands[j]
				}
				w, losers := Select(cands, tt.metric)
				if tt.want < 0 {
					if w != nil {
						t.Fatalf("winner %s, want none", w.Mutator)
					}
					if len(losers) != len(cands) {
						t.Fatalf("%d losers, want %d", len(losers), len(cands))
					}
					continue
				}
				if w == nil || w.Strategy.Hash() != tt.cands[tt.want].Strategy.Hash() {
					t.Fatalf("order %v: winner %v, want candidate %d", perm, w, tt.want)
				}
				var want []Evaluated
				for _, j := range perm {
					if j != tt.want {
						want = append(want, tt.cands[j])
					}
				}
				if !slices.EqualFunc(losers, want, func(a, b Evaluated) bool { return a.Strategy == b.Strategy }) {
					t.Fatalf("order %v: losers are not the others in order", perm)
				}
			}
		})
	}
}

func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

func TestPromote(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	dir := t.TempDir()
	base := baseline()
	win := evaluate(t, base, revise(t, base, "greedy", map[string]float64{"response_speed": 0.85}), "greedy", improving, false)
	if win.Result.Ruling != sdk.Pass {
		t.Fatalf("the chain ruled %s:\n%s", win.Result.Ruling, win.Result)
	}
	path, err := Promote(ctx, st, dir, win, tPromote)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "email-handler-2.1.0.toml"); path != want {
		t.Errorf("path %s, want %s", path, want)
	}
	loaded, err := strategy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Hash() != win.Strategy.Hash() || loaded.Metadata.CreatedBy != "sextant evolve (greedy)" {
		t.Errorf("the file is not the candidate: %s by %s", loaded.Hash(), loaded.Metadata.CreatedBy)
	}
	if r := loaded.ChangeLog[len(loaded.ChangeLog)-1]; len(r.Changes) != 1 || r.Changes[0].Reason != "replay: success_rate +0.150 [0.100, 0.200], p<0.001, n=200" {
		t.Errorf("change log %+v", r)
	}

	rec, err := st.Strategy(ctx, "email-handler", "2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Parent != "2.0.0" || rec.Hash != win.Strategy.Hash() || rec.Author != "sextant evolve" || !rec.Created.Equal(tPromote) {
		t.Errorf("record %+v", rec)
	}
	var ev Evidence
	if err := json.Unmarshal(rec.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Mutator != "greedy" || ev.Review != nil || ev.Gates.Ruling != sdk.Pass || len(ev.Gates.Gates) != 3 ||
		ev.Comparison.Candidate != (StrategyID{"email-handler", "2.1.0", win.Strategy.Hash()}) ||
		ev.Comparison.Baseline != (StrategyID{"email-handler", "2.0.0", base.Hash()}) ||
		ev.Comparison.Improved != 30 || len(ev.Comparison.ImprovedTasks) != maxListed || ev.Comparison.Regressed != 0 ||
		len(ev.Comparison.Metrics) != len(MetricNames()) || ev.Comparison.Metrics[0].Effect != win.Comparison.Metrics[0].Effect ||
		len(ev.Comparison.Diff.Parameters) != 1 {
		t.Errorf("evidence %+v", ev)
	}
	if ev.Comparison.ImprovedTasks[0] != "t170" {
		t.Errorf("first improved task %s", ev.Comparison.ImprovedTasks[0])
	}

	t.Run("again is a no-op", func(t *testing.T) {
		p2, err := Promote(ctx, st, dir, win, tPromote.Add(time.Hour))
		if err != nil || p2 != path {
			t.Fatalf("%s, %v", p2, err)
		}
		rec2, _ := st.Strategy(ctx, "email-handler", "2.1.0")
		if !rec2.Created.Equal(tPromote) {
			t.Errorf("record rewritten: %v", rec2.Created)
		}
	})
	t.Run("an interrupted promotion completes", func(t *testing.T) {
		st2 := openStore(t) // the file exists, the record does not
		if p2, err := Promote(ctx, st2, dir, win, tPromote); err != nil || p2 != path {
			t.Fatalf("%s, %v", p2, err)
		}
		if _, err := st2.Strategy(ctx, "email-handler", "2.1.0"); err != nil {
			t.Error(err)
		}
	})
	t.Run("another 2.1.0 is refused", func(t *testing.T) {
		other := evaluate(t, base, revise(t, base, "conservative", map[string]float64{"response_speed": 0.8}), "conservative", improving, false)
		_, err := Promote(ctx, st, dir, other, tPromote)
		want := "promote email-handler 2.1.0 (conservative): version 2.1.0 is recorded with hash " + shortHash(win.Strategy.Hash()) + ": already exists"
		if err == nil || err.Error() != want || !errors.Is(err, store.ErrExists) {
			t.Fatalf("err =\n %v\nwant\n %s", err, want)
		}
		// The file is the same check, for a store that has not seen it.
		_, err = Promote(ctx, openStore(t), dir, other, tPromote)
		want = "promote email-handler 2.1.0 (conservative): write strategy " + path + ": file already exists (strategy versions are immutable; bump the version)"
		if err == nil || err.Error() != want || !errors.Is(err, fs.ErrExist) {
			t.Fatalf("err =\n %v\nwant\n %s", err, want)
		}
		if l, _ := strategy.Load(path); l.Hash() != win.Strategy.Hash() {
			t.Error("the promoted file was overwritten")
		}
	})
}

func TestPromoteRefuses(t *testing.T) {
	base := baseline()
	cand := revise(t, base, "greedy", map[string]float64{"response_speed": 0.85})
	good := evaluate(t, base, cand, "greedy", improving, false)
	changed := good
	changed.Strategy = cand.Clone()
	changed.Strategy.Parameters["autonomy_level"] = 0.75
	noCmp := good
	noCmp.Comparison = nil
	tests := []struct {
		name string
		e    Evaluated
		at   time.Time
		want string
	}{
		{"failed", evaluate(t, base, cand, "greedy", regressed, false), tPromote,
			"promote email-handler 2.1.0 (greedy): the gates ruled fail, not pass"},
		{"waiting for review", evaluate(t, base, cand, "greedy", improving, true), tPromote,
			"promote email-handler 2.1.0 (greedy): the gates ruled review, not pass (queue it for review and approve it)"},
		{"changed after the comparison", changed, tPromote,
			"promote email-handler 2.1.0 (greedy): the strategy (hash " + shortHash(changed.Strategy.Hash()) + ") is not the candidate that was compared (hash " + shortHash(cand.Hash()) + ")"},
		{"no comparison", noCmp, tPromote, "promote email-handler 2.1.0 (greedy): no comparison (nothing justifies it)"},
		{"no strategy", Evaluated{Mutator: "greedy"}, tPromote, "promote candidate: no strategy"},
		{"no time", good, time.Time{}, "promote email-handler 2.1.0 (greedy): missing time (at)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Promote(context.Background(), openStore(t), dir, tt.e, tt.at)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err =\n %v\nwant\n %s", err, tt.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("files written: %v", ents)
			}
		})
	}
}

func TestArchiveAndSettle(t *testing.T) {
	ctx := context.Background()
	base := baseline()
	greedy := evaluate(t, base, revise(t, base, "greedy", map[string]float64{"response_speed": 0.85}), "greedy", improving, false)
	conservative := evaluate(t, base, revise(t, base, "conservative", map[string]float64{"response_speed": 0.8}), "conservative", smaller, false)
	exploratory := evaluate(t, base, revise(t, base, "exploratory", map[string]float64{"autonomy_level": 0.6}), "exploratory", regressed, false)
	curated := evaluate(t, base, revise(t, base, "curate", map[string]float64{"user_confirmation": 0.55}), "curate", improving, true)

	t.Run("a winner", func(t *testing.T) {
		st, dir := openStore(t), t.TempDir()
		s, err := Settle(ctx, st, dir, "email-triage", []Evaluated{exploratory, conservative, greedy, curated}, "", tPromote)
		if err != nil {
			t.Fatal(err)
		}
		if s.Winner == nil || s.Winner.Mutator != "greedy" || s.Path != filepath.Join(dir, "email-handler-2.1.0.toml") || len(s.Reviews) != 0 || len(s.Archived) != 3 {
			t.Fatalf("settlement %+v", s)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("files %v, want the winner's only", ents)
		}
		got, err := ListArchived(ctx, st, "email-handler")
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]string{}
		for _, a := range got {
			reasons[a.Mutator] = a.Reason
			s, err := strategy.Parse("archived", []byte(a.Strategy))
			if err != nil {
				t.Fatal(err)
			}
			if s.Evolution.BranchType != strategy.Archived || a.Hash == s.Hash() || a.ID != shortHash(a.Hash) ||
				a.Version != "2.1.0" || a.Parent != "2.0.0" || !a.Archived.Equal(tPromote) || a.Evidence.Comparison.Candidate.Hash != a.Hash {
				t.Errorf("archived %s: %+v", a.Mutator, a)
			}
		}
		want := map[string]string{
			"exploratory":  "gates failed: no-regression, improvement",
			"conservative": "not selected: greedy candidate " + greedy.ID() + " was promoted",
			"curate":       "not selected: greedy candidate " + greedy.ID() + " was promoted",
		}
		if len(reasons) != 3 || reasons["exploratory"] != want["exploratory"] || reasons["conservative"] != want["conservative"] || reasons["curate"] != want["curate"] {
			t.Errorf("reasons\n got %q\nwant %q", reasons, want)
		}
		if l, _ := ListReviews(ctx, st, ""); len(l) != 0 {
			t.Errorf("reviews queued beside a winner: %d", len(l))
		}
	})
	t.Run("no winner: review queued", func(t *testing.T) {
		st, dir := openStore(t), t.TempDir()
		s, err := Settle(ctx, st, dir, "email-triage", []Evaluated{exploratory, curated}, "", tPromote)
		if err != nil {
			t.Fatal(err)
		}
		if s.Winner != nil || s.Path != "" || len(s.Reviews) != 1 || s.Reviews[0].ID != curated.ID() || len(s.Archived) != 1 || s.Archived[0].Mutator != "exploratory" {
			t.Fatalf("settlement %+v", s)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("files written: %v", ents)
		}
		if l, _ := ListArchived(ctx, st, ""); len(l) != 1 {
			t.Errorf("%d archived", len(l))
		}
	})
	t.Run("archive needs a time", func(t *testing.T) {
		if err := Archive(ctx, openStore(t), nil, []Evaluated{exploratory}, time.Time{}); err == nil || err.Error() != "archive: missing time (at)" {
			t.Errorf("err = %v", err)
		}
	})
}

// The whole round, from mutators through probes, comparison, gates and
// promotion: the same inputs promote the same bytes.
func TestEvolveRoundDeterministic(t *testing.T) {
	ctx := context.Background()
	round := func() []byte {
		base := baseline()
		probe := MemoProbe((&fakeProbe{base: base, effects: map[string]float64{"response_speed=0.85": 0.045, "user_confirmation=0.5": 0.03}}).probe)
		var cands []Evaluated
		for _, mk := range []func(MutateOptions) (Mutator, error){Greedy, Conservative, Exploratory} {
			m, _ := mk(MutateOptions{At: tEvolve, Seed: 7})
			got, err := m.Propose(ctx, base, probe)
			if err != nil && !errors.Is(err, ErrNothingProposed) {
				t.Fatal(err)
			}
			for _, c := range got {
				cands = append(cands, evaluate(t, base, c, m.Name(), improving, false))
			}
		}
		st, dir := openStore(t), t.TempDir()
		s, err := Settle(ctx, st, dir, "email-triage", cands, "", tPromote)
		if err != nil || s.Winner == nil {
			t.Fatalf("%+v, %v", s, err)
		}
		// The same gain: the smaller change wins.
		if s.Winner.Mutator != "conservative" {
			t.Errorf("winner %s", s.Winner.Mutator)
		}
		file, _ := os.ReadFile(s.Path)
		rec, _ := st.Strategy(ctx, "email-handler", "2.1.0")
		return append(file, rec.Evidence...)
	}
	if a, b := round(), round(); string(a) != string(b) {
		t.Errorf("rounds differ:\n%s\n---\n%s", a, b)
	}
}
