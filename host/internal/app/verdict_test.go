package app

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// judged is a real judgment of the email-triage strategy against a
// candidate on three tasks, t2 of which the candidate fixes; output is
// the outputs a replay kept.
func judged(t *testing.T) (j *evolve.Judgment, output func(task, hash string) (json.RawMessage, bool)) {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "pipelines", "email-triage")
	base, err := strategy.Load(filepath.Join(dir, "strategies", "email-handler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cand, err := strategy.Load(filepath.Join(dir, "candidates", "improving.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var results []replay.Result
	for _, task := range []string{"t1", "t2", "t3"} {
		for _, st := range []*strategy.Strategy{base, cand} {
			ok := task != "t2" || st == cand
			results = append(results, replay.Result{Task: task, Strategy: st.Metadata.Version, Hash: st.Hash(), Status: store.StatusCompleted,
				SelfReplay: st == base, Reproduced: st == base, Outcome: sdk.TaskResult{Success: ok}})
		}
	}
	j = evolve.Judge(context.Background(), results, base, cand, nil, evolve.Options{Seed: 1})
	output = func(task, hash string) (json.RawMessage, bool) {
		return json.RawMessage(`{"task":"` + task + `","by":"` + hash[:6] + `"}`), true
	}
	return j, output
}

// savedOne checks that st holds one verdict of gate on email-triage, with
// the flipped task's outputs.
func savedOne(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	vs, err := evolve.ListVerdicts(ctx, st, "email-triage")
	if err != nil || len(vs) != 1 || vs[0].Command != "gate" {
		t.Fatalf("verdicts: %v %+v, want the one of gate", err, vs)
	}
	v, err := evolve.GetVerdict(ctx, st, vs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, tv := range v.Tasks {
		if flipped := tv.Task == "t2"; flipped != (tv.Flip == evolve.FlipImproved) || flipped != (tv.CandidateOutput != nil) {
			t.Errorf("task %s: flip %q, candidate output %s", tv.Task, tv.Flip, tv.CandidateOutput)
		}
	}
}

// TestSaveVerdict: a verdict goes into a store this process can hold;
// nowhere (and no store is made) when there is none; and a store another
// process holds without a server is the lock error.
func TestSaveVerdict(t *testing.T) {
	ctx := context.Background()
	j, output := judged(t)
	dir := filepath.Join(t.TempDir(), ".sextant")
	v := Verdict{Store: dir, Command: "gate", Pipeline: "email-triage", Judgment: j, Output: output}
	if err := SaveVerdict(ctx, v, quiet()); err != nil {
		t.Fatalf("no store: %v, want nothing recorded", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("saving a verdict without a store made %s: %v", dir, err)
	}
	st, err := store.Open(ctx, dir, store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	if err := SaveVerdict(ctx, v, quiet()); !errors.As(err, new(*store.LockedError)) {
		t.Fatalf("a store held without a server: %v, want the lock error", err)
	}
	st.Close()
	if err := SaveVerdict(ctx, v, quiet()); err != nil {
		t.Fatal(err)
	}
	st, err = store.Open(ctx, dir, store.NewConfig().WithLogger(quiet()).WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	savedOne(t, st)
}

// TestSaveVerdictThroughServer: a store a sextant serve holds gets the
// verdict through its API.
func TestSaveVerdictThroughServer(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	st := serveFixture(t, f)
	j, output := judged(t)
	if err := SaveVerdict(ctx, Verdict{Store: f.store, Command: "gate", Pipeline: "email-triage", Judgment: j, Output: output}, quiet()); err != nil {
		t.Fatal(err)
	}
	savedOne(t, st)
}
