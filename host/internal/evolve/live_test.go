package evolve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// livePipeline is a pipeline whose configured strategy is baseline(), in
// strategies/ beside it.
func livePipeline(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "strategies"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := baseline().WriteFile(filepath.Join(dir, "strategies", "email-handler.toml")); err != nil {
		t.Fatal(err)
	}
	return &pipeline.Pipeline{Name: "email-triage", File: filepath.Join(dir, "pipeline.toml"), Dir: dir,
		Strategy: pipeline.StrategyRef{File: "strategies/email-handler.toml"}}
}

// sibling derives version from baseline as mutator, changing params, and
// evaluates it (review asks for a person).
func sibling(t *testing.T, version, mutator string, params map[string]float64, review bool) Evaluated {
	t.Helper()
	base := baseline()
	c := revise(t, base, mutator, params)
	c.Metadata.Version = version
	c.ChangeLog[len(c.ChangeLog)-1].Version = version
	return evaluate(t, base, c, mutator, improving, review)
}

var tMove = tDecided.Add(time.Hour)

func TestLiveBeforeAnyMove(t *testing.T) {
	p := livePipeline(t)
	for _, st := range []*store.Store{nil, openStore(t)} {
		l, err := GetLive(context.Background(), st, p)
		if err != nil {
			t.Fatal(err)
		}
		want := LiveVersion{Name: "email-handler", Version: "2.0.0", Hash: baseline().Hash(), File: "strategies/email-handler.toml", Action: MoveConfigured}
		if l.Live != want || l.Configured != want || l.Runs != want || l.Pinned || len(l.History) != 0 {
			t.Errorf("live %+v", l)
		}
	}
}

func TestMoveLive(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	p := livePipeline(t)
	dir := filepath.Join(p.Dir, "strategies")
	win := sibling(t, "2.1.0", "greedy", map[string]float64{"response_speed": 0.85}, false)
	if _, err := Promote(ctx, st, dir, win, tPromote); err != nil {
		t.Fatal(err)
	}

	t.Run("refused, nothing changes", func(t *testing.T) {
		tests := []struct {
			name string
			m    Move
			want string
		}{
			{"unknown version", Move{Version: "9.9.9", Action: MovePromote, By: "ana@host", At: tMove},
				`promote email-triage 9.9.9: no version "9.9.9" of strategy email-handler: only 2.0.0, 2.1.0 can be made live (the configured file, or a version evolve or a review promoted)`},
			{"bad version", Move{Version: "../x", Action: MoveRollback, By: "ana@host", At: tMove},
				`rollback email-triage ../x: no version "../x" of strategy email-handler: only 2.0.0, 2.1.0 can be made live`},
			{"nothing to roll back to", Move{Action: MoveRollback, By: "ana@host", At: tMove},
				`rollback email-triage: nothing to roll back to: email-handler 2.0.0 has been live since it was configured (name a version)`},
			{"no version to promote", Move{Action: MovePromote, By: "ana@host", At: tMove}, `promote email-triage: name the version to make live`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := MoveLive(ctx, st, p, tt.m)
				if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, sdk.ErrInvalid) {
					t.Fatalf("err %v\nwant %s (invalid input)", err, tt.want)
				}
				if l, _ := GetLive(ctx, st, p); l.Live.Version != "2.0.0" || len(l.History) != 0 {
					t.Errorf("live moved: %+v", l)
				}
			})
		}
		if err := os.Rename(filepath.Join(dir, "email-handler-2.1.0.toml"), filepath.Join(dir, "moved.toml")); err != nil {
			t.Fatal(err)
		}
		_, err := MoveLive(ctx, st, p, Move{Version: "2.1.0", Action: MovePromote, By: "ana@host", At: tMove})
		if want := "promote email-triage 2.1.0: email-handler 2.1.0 is recorded but its file strategies/email-handler-2.1.0.toml is missing"; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("err %v, want %s", err, want)
		}
		if err := os.Rename(filepath.Join(dir, "moved.toml"), filepath.Join(dir, "email-handler-2.1.0.toml")); err != nil {
			t.Fatal(err)
		}
	})

	l, err := MoveLive(ctx, st, p, Move{Version: "2.1.0", Action: MovePromote, By: "ana@host", Reason: "canary looked fine", At: tMove, Expect: "2.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	want := LiveVersion{Name: "email-handler", Version: "2.1.0", Hash: win.Strategy.Hash(), File: "strategies/email-handler-2.1.0.toml",
		Action: MovePromote, By: "ana@host", Reason: "canary looked fine", At: tMove, From: "2.0.0"}
	if l.Live != want || l.Runs != want || len(l.History) != 2 || l.History[0].Action != MoveConfigured || l.History[1] != want {
		t.Fatalf("live %+v", l)
	}
	s, file, err := RunStrategy(ctx, st, p)
	if err != nil || s.Hash() != win.Strategy.Hash() || file != filepath.FromSlash("strategies/email-handler-2.1.0.toml") {
		t.Fatalf("runs %v %s: %v", s, file, err)
	}

	t.Run("the same version again changes nothing", func(t *testing.T) {
		again, err := MoveLive(ctx, st, p, Move{Version: "2.1.0", Action: MovePromote, By: "bob@host", At: tMove.Add(time.Hour)})
		if err != nil || again.Live != want || len(again.History) != 2 {
			t.Fatalf("%+v, %v", again, err)
		}
	})
	t.Run("a stale expectation is refused", func(t *testing.T) {
		_, err := MoveLive(ctx, st, p, Move{Version: "2.0.0", Action: MoveRollback, By: "bob@host", At: tMove, Expect: "2.0.0"})
		if !errors.Is(err, ErrLiveMoved) || !strings.Contains(err.Error(), "2.1.0 is live now (promote by ana@host at ") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("pinned runs the configured file", func(t *testing.T) {
		pinned := *p
		pinned.Strategy.Pin = true
		l, err := GetLive(ctx, st, &pinned)
		if err != nil || l.Live.Version != "2.1.0" || l.Runs.Version != "2.0.0" || !l.Pinned {
			t.Fatalf("%+v, %v", l, err)
		}
	})

	// rollback without a version goes to the one live before
	l, err = MoveLive(ctx, st, p, Move{Action: MoveRollback, By: "bob@host", Reason: "complaints", At: tMove.Add(2 * time.Hour)})
	if err != nil || l.Live.Version != "2.0.0" || l.Live.From != "2.1.0" || l.Live.File != "strategies/email-handler.toml" || len(l.History) != 3 {
		t.Fatalf("%+v, %v", l, err)
	}

	t.Run("an edited live file is an error, not a silent change", func(t *testing.T) {
		if _, err := MoveLive(ctx, st, p, Move{Version: "2.1.0", Action: MovePromote, By: "ana@host", At: tMove.Add(3 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "email-handler-2.1.0.toml")
		text, _ := os.ReadFile(path)
		if err := os.WriteFile(path, []byte(strings.Replace(string(text), "0.85", "0.95", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := RunStrategy(ctx, st, p)
		if err == nil || !strings.Contains(err.Error(), "live strategy of email-triage: strategies/email-handler-2.1.0.toml changed since email-handler 2.1.0 was made live") {
			t.Fatalf("err %v", err)
		}
	})
}

// Two operators move the live version at once from the version they both
// read: exactly one wins, whatever the order.
func TestMoveLiveConcurrent(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	p := livePipeline(t)
	dir := filepath.Join(p.Dir, "strategies")
	for _, e := range []Evaluated{
		sibling(t, "2.1.0", "greedy", map[string]float64{"response_speed": 0.85}, false),
		sibling(t, "2.2.0", "conservative", map[string]float64{"response_speed": 0.80}, false),
	} {
		if _, err := Promote(ctx, st, dir, e, tPromote); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 20 {
		if _, err := MoveLive(ctx, st, p, Move{Version: "2.0.0", Action: MoveRollback, By: "ops", At: tMove}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, v := range []string{"2.1.0", "2.2.0"} {
			wg.Go(func() {
				_, errs[i] = MoveLive(ctx, st, p, Move{Version: v, Action: MovePromote, By: "op" + v, At: tMove, Expect: "2.0.0"})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrLiveMoved):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d moves won: %v", round, won, errs)
		}
	}
}

func TestApproveLive(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	p := livePipeline(t)
	a := sibling(t, "2.1.0", "greedy", map[string]float64{"response_speed": 0.85}, true)
	b := sibling(t, "2.2.0", "conservative", map[string]float64{"response_speed": 0.80}, true)
	c := sibling(t, "2.3.0", "curate", map[string]float64{"user_confirmation": 0.55}, true)
	for _, e := range []Evaluated{a, b, c} {
		if _, err := Queue(ctx, st, p.Name, e, tReview); err != nil {
			t.Fatal(err)
		}
	}
	r, l, err := ApproveLive(ctx, st, p, "", a.ID(), "alice", "flips checked", tDecided)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != ReviewApproved || l.Live.Version != "2.1.0" || l.Live.Action != MoveApprove || l.Live.By != "alice" || l.Live.Reason != "review "+a.ID()+": flips checked" {
		t.Fatalf("request %+v\nlive %+v", r, l)
	}
	if rec, err := st.Strategy(ctx, "email-handler", "2.1.0"); err != nil || rec.Author != "alice" {
		t.Fatalf("lineage %+v, %v", rec, err)
	}
	for _, e := range []Evaluated{b, c} {
		got, err := GetReview(ctx, st, e.ID())
		if err != nil || got.Status != ReviewSuperseded || got.By != "alice" || !strings.HasPrefix(got.Note, "superseded: sibling email-handler 2.1.0 was made live (approve by alice)") {
			t.Fatalf("sibling %+v, %v", got, err)
		}
	}
	_, _, err = ApproveLive(ctx, st, p, "", b.ID(), "bob", "", tDecided)
	if !errors.Is(err, ErrDecided) || !strings.Contains(err.Error(), "(superseded by alice at ") {
		t.Fatalf("approving a superseded sibling: %v", err)
	}

	t.Run("a candidate of a version no longer live is refused", func(t *testing.T) {
		// d was queued against 2.0.0 in a later round, before 2.1.0 went live
		d := sibling(t, "2.4.0", "exploratory", map[string]float64{"autonomy_level": 0.75}, true)
		if _, err := Queue(ctx, st, p.Name, d, tReview.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		_, _, err := ApproveLive(ctx, st, p, "", d.ID(), "bob", "", tDecided.Add(time.Hour))
		var se *StaleError
		if !errors.As(err, &se) || !errors.Is(err, ErrStale) || !errors.Is(err, sdk.ErrInvalid) || se.Live.Version != "2.1.0" || se.Parent.Version != "2.0.0" {
			t.Fatalf("err %v", err)
		}
		want := "approve review " + d.ID() + ": its parent is no longer live: it was derived from email-handler 2.0.0, but email-handler 2.1.0 is live in email-triage (approve by alice)"
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("err %v\nwant %s", err, want)
		}
		got, _ := GetReview(ctx, st, d.ID())
		if got.Status != ReviewPending {
			t.Errorf("the request changed: %+v", got)
		}
		if _, err := os.Stat(filepath.Join(p.Dir, "strategies", "email-handler-2.4.0.toml")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a file was written: %v", err)
		}
		if _, err := st.Strategy(ctx, "email-handler", "2.4.0"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a version was recorded: %v", err)
		}
	})
	t.Run("after a rollback to its parent it can be approved", func(t *testing.T) {
		if _, err := MoveLive(ctx, st, p, Move{Action: MoveRollback, By: "bob", At: tDecided.Add(2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		d := sibling(t, "2.4.0", "exploratory", map[string]float64{"autonomy_level": 0.75}, true)
		_, l, err := ApproveLive(ctx, st, p, "", d.ID(), "bob", "", tDecided.Add(3*time.Hour))
		if err != nil || l.Live.Version != "2.4.0" || l.Live.From != "2.0.0" {
			t.Fatalf("%+v, %v", l, err)
		}
		if s, _ := strategy.Load(filepath.Join(p.Dir, "strategies", "email-handler-2.4.0.toml")); s == nil || s.Hash() != d.Strategy.Hash() {
			t.Error("the approved file is not the candidate")
		}
	})
}

// A pipeline configured with another strategy file since the last move
// runs that file: editing the configuration is a deployment too.
func TestLiveReconfigured(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	p := livePipeline(t)
	dir := filepath.Join(p.Dir, "strategies")
	if _, err := Promote(ctx, st, dir, sibling(t, "2.1.0", "greedy", map[string]float64{"response_speed": 0.85}, false), tPromote); err != nil {
		t.Fatal(err)
	}
	if _, err := MoveLive(ctx, st, p, Move{Version: "2.1.0", Action: MovePromote, By: "ana@host", At: tMove}); err != nil {
		t.Fatal(err)
	}
	edited := baseline()
	edited.Metadata.Version = "2.0.1"
	edited.Parameters["autonomy_level"] = 0.65
	if err := edited.WriteFile(filepath.Join(dir, "email-handler-2.0.1.toml")); err != nil {
		t.Fatal(err)
	}
	p.Strategy.File = "strategies/email-handler-2.0.1.toml"
	l, err := GetLive(ctx, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if l.Live.Version != "2.0.1" || l.Live.Action != MoveConfigured || l.Live.From != "2.1.0" || l.Runs.Version != "2.0.1" || len(l.History) != 3 {
		t.Fatalf("live %+v", l)
	}
	// the next move starts from it: a rollback goes back to 2.1.0
	l, err = MoveLive(ctx, st, p, Move{Action: MoveRollback, By: "bob@host", At: tMove.Add(time.Hour), Expect: "2.0.1"})
	if err != nil || l.Live.Version != "2.1.0" || l.Live.From != "2.0.1" || len(l.History) != 4 {
		t.Fatalf("%+v, %v", l, err)
	}
}

// A version configured earlier can be rolled back to while its file is
// unchanged.
func TestLiveRollbackToEarlierConfiguration(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	p := livePipeline(t)
	dir := filepath.Join(p.Dir, "strategies")
	if _, err := Promote(ctx, st, dir, sibling(t, "2.1.0", "greedy", map[string]float64{"response_speed": 0.85}, false), tPromote); err != nil {
		t.Fatal(err)
	}
	if _, err := MoveLive(ctx, st, p, Move{Version: "2.1.0", Action: MovePromote, By: "ana@host", At: tMove}); err != nil {
		t.Fatal(err)
	}
	edited := baseline()
	edited.Metadata.Version = "2.0.1"
	if err := edited.WriteFile(filepath.Join(dir, "next.toml")); err != nil {
		t.Fatal(err)
	}
	p.Strategy.File = "strategies/next.toml"
	l, err := MoveLive(ctx, st, p, Move{Version: "2.0.0", Action: MoveRollback, By: "bob@host", At: tMove.Add(time.Hour)})
	if err != nil || l.Live.Version != "2.0.0" || l.Live.File != "strategies/email-handler.toml" || l.Runs.Version != "2.0.0" {
		t.Fatalf("%+v, %v", l, err)
	}
	_, err = MoveLive(ctx, st, p, Move{Version: "1.0.0", Action: MoveRollback, By: "bob@host", At: tMove.Add(time.Hour)})
	if err == nil || !strings.Contains(err.Error(), "only 2.0.1, 2.0.0, 2.1.0 can be made live") {
		t.Fatalf("err %v", err)
	}
}
