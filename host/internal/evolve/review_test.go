package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

var (
	tReview  = tPromote.Add(2 * time.Hour)
	tDecided = tReview.Add(24 * time.Hour)
)

// waiting is a candidate the chain sent to review.
func waiting(t *testing.T, mutator string, params map[string]float64) Evaluated {
	t.Helper()
	base := baseline()
	e := evaluate(t, base, revise(t, base, mutator, params), mutator, improving, true)
	if e.Result.Ruling != sdk.Review {
		t.Fatalf("the chain ruled %s", e.Result.Ruling)
	}
	return e
}

func TestQueue(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	e := waiting(t, "curate", map[string]float64{"user_confirmation": 0.55})
	r, err := Queue(ctx, st, "email-triage", e, tReview)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != e.ID() || len(r.ID) != 12 || !strings.HasPrefix(e.Strategy.Hash(), r.ID) || r.Pipeline != "email-triage" || r.Mutator != "curate" ||
		r.Baseline != (StrategyID{"email-handler", "2.0.0", baseline().Hash()}) || r.Candidate != string(e.Strategy.Encode()) ||
		r.Comparison.Candidate.Hash != e.Strategy.Hash() || r.Result.Ruling != sdk.Review || len(r.Result.Gates) != 4 ||
		!r.Created.Equal(tReview) || r.Status != ReviewPending || !r.Decided.IsZero() || r.By != "" || r.Path != "" {
		t.Errorf("request %+v", r)
	}
	got, err := GetReview(ctx, st, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(r)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Errorf("stored request differs:\n%s\n%s", a, b)
	}

	t.Run("again returns the request as it is", func(t *testing.T) {
		again, err := Queue(ctx, st, "other", e, tReview.Add(time.Hour))
		if err != nil || !again.Created.Equal(tReview) || again.Pipeline != "email-triage" {
			t.Fatalf("%+v, %v", again, err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		base := baseline()
		passed := evaluate(t, base, revise(t, base, "greedy", map[string]float64{"response_speed": 0.85}), "greedy", improving, false)
		noCmp := e
		noCmp.Comparison = nil
		tests := []struct {
			name string
			e    Evaluated
			at   time.Time
			want string
		}{
			{"passed", passed, tReview, "queue email-handler 2.1.0 (greedy) for review: the gates ruled pass, not review"},
			{"no comparison", noCmp, tReview, "queue email-handler 2.1.0 (curate) for review: no comparison (nothing justifies it)"},
			{"no time", e, time.Time{}, "queue email-handler 2.1.0 (curate) for review: missing time (at)"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if _, err := Queue(ctx, st, "email-triage", tt.e, tt.at); err == nil || err.Error() != tt.want {
					t.Fatalf("err =\n %v\nwant\n %s", err, tt.want)
				}
			})
		}
	})
}

// sharedPrefix returns two waiting candidates whose ids start with the
// same hex digit.
func sharedPrefix(t *testing.T) (Evaluated, Evaluated) {
	seen := map[byte]Evaluated{}
	for i := range 17 {
		e := waiting(t, "greedy", map[string]float64{"autonomy_level": 0.61 + float64(i)/100})
		if prev, ok := seen[e.ID()[0]]; ok {
			return prev, e
		}
		seen[e.ID()[0]] = e
	}
	panic("17 ids with 16 first digits always share one")
}

func TestListAndGetReviews(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	a, b := sharedPrefix(t)
	c := waiting(t, "curate", map[string]float64{"user_confirmation": 0.55})
	for i, e := range []Evaluated{c, b, a} { // created in this order
		if _, err := Queue(ctx, st, "email-triage", e, tReview.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Reject(ctx, st, b.ID(), "alice", "", tDecided); err != nil {
		t.Fatal(err)
	}
	ids := func(rs []ReviewRequest) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		status ReviewStatus
		want   string
	}{
		{"", strings.Join([]string{c.ID(), b.ID(), a.ID()}, " ")},
		{ReviewPending, c.ID() + " " + a.ID()},
		{ReviewRejected, b.ID()},
		{ReviewApproved, ""},
	} {
		got, err := ListReviews(ctx, st, tt.status)
		if err != nil || ids(got) != tt.want {
			t.Errorf("ListReviews(%q) = %s, %v; want %s", tt.status, ids(got), err, tt.want)
		}
	}

	first, second := min(a.ID(), b.ID()), max(a.ID(), b.ID())
	for _, tt := range []struct {
		name, id, want, err string
	}{
		{"exact", a.ID(), a.ID(), ""},
		{"unique prefix", c.ID()[:7], c.ID(), ""},
		{"ambiguous prefix", a.ID()[:1], "", `review "` + a.ID()[:1] + `": ambiguous id (matches ` + first + ", " + second + ")"},
		{"unknown", "zzzz", "", `review "zzzz": not found`},
		{"empty", "", "", "review: empty id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := GetReview(ctx, st, tt.id)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || r.ID != tt.want {
				t.Fatalf("%v, %v", r, err)
			}
		})
	}
	if _, err := GetReview(ctx, st, "zzzz"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown id: %v is not store.ErrNotFound", err)
	}
}

func TestApprove(t *testing.T) {
	ctx := context.Background()
	st, dir := openStore(t), t.TempDir()
	e := waiting(t, "curate", map[string]float64{"user_confirmation": 0.55})
	if _, err := Queue(ctx, st, "email-triage", e, tReview); err != nil {
		t.Fatal(err)
	}
	r, err := Approve(ctx, st, dir, e.ID()[:6], "alice", "checked the flipped tasks", tDecided)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "email-handler-2.1.0.toml")
	if r.Status != ReviewApproved || r.By != "alice" || r.Note != "checked the flipped tasks" || !r.Decided.Equal(tDecided) || r.Path != path {
		t.Errorf("request %+v", r)
	}
	if stored, _ := GetReview(ctx, st, e.ID()); stored.Status != ReviewApproved || stored.Path != path {
		t.Errorf("stored %+v", stored)
	}
	if l, err := strategy.Load(path); err != nil || l.Hash() != e.Strategy.Hash() {
		t.Fatalf("file: %v", err)
	}
	rec, err := st.Strategy(ctx, "email-handler", "2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	var ev Evidence
	if err := json.Unmarshal(rec.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	want := Decision{ID: e.ID(), Status: "approved", By: "alice", At: tDecided, Note: "checked the flipped tasks"}
	if rec.Author != "alice" || rec.Hash != e.Strategy.Hash() || !rec.Created.Equal(tDecided) ||
		ev.Review == nil || *ev.Review != want || ev.Gates.Ruling != sdk.Review || ev.Mutator != "curate" {
		t.Errorf("record %+v, evidence %+v", rec, ev)
	}

	t.Run("decided once", func(t *testing.T) {
		const when = "2026-02-20T13:30:00Z"
		for _, tt := range []struct {
			name string
			do   func() error
			want string
		}{
			{"approve", func() error { _, err := Approve(ctx, st, dir, e.ID(), "bob", "", tDecided); return err },
				"approve review " + e.ID() + ": already decided (approved by alice at " + when + ")"},
			{"reject", func() error { _, err := Reject(ctx, st, e.ID(), "bob", "", tDecided); return err },
				"reject review " + e.ID() + ": already decided (approved by alice at " + when + ")"},
		} {
			err := tt.do()
			if err == nil || err.Error() != tt.want || !errors.Is(err, ErrDecided) {
				t.Errorf("%s: err =\n %v\nwant\n %s", tt.name, err, tt.want)
			}
		}
	})
}

func TestReject(t *testing.T) {
	ctx := context.Background()
	st, dir := openStore(t), t.TempDir()
	e := waiting(t, "curate", map[string]float64{"user_confirmation": 0.55})
	if _, err := Queue(ctx, st, "email-triage", e, tReview); err != nil {
		t.Fatal(err)
	}
	r, err := Reject(ctx, st, e.ID(), "bob", "too many confirmations dropped", tDecided)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != ReviewRejected || r.By != "bob" || r.Note != "too many confirmations dropped" || !r.Decided.Equal(tDecided) || r.Path != "" {
		t.Errorf("request %+v", r)
	}
	_, err = Approve(ctx, st, dir, e.ID(), "alice", "", tDecided)
	if !errors.Is(err, ErrDecided) {
		t.Errorf("approve after reject: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files written: %v", ents)
	}
	if _, err := st.Strategy(ctx, "email-handler", "2.1.0"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a rejected candidate was recorded: %v", err)
	}
}

func TestApproveRefuses(t *testing.T) {
	ctx := context.Background()
	e := waiting(t, "curate", map[string]float64{"user_confirmation": 0.55})
	queued := func(t *testing.T) *store.Store {
		st := openStore(t)
		if _, err := Queue(ctx, st, "email-triage", e, tReview); err != nil {
			t.Fatal(err)
		}
		return st
	}
	t.Run("arguments", func(t *testing.T) {
		st := queued(t)
		for _, tt := range []struct {
			name string
			err  error
			want string
		}{
			{"no reviewer", func() error { _, err := Approve(ctx, st, t.TempDir(), e.ID(), " ", "", tDecided); return err }(),
				"approve review " + e.ID() + ": missing reviewer (by)"},
			{"no time", func() error { _, err := Reject(ctx, st, e.ID(), "bob", "", time.Time{}); return err }(),
				"reject review " + e.ID() + ": missing time (at)"},
			{"unknown id", func() error { _, err := Approve(ctx, st, t.TempDir(), "abc", "bob", "", tDecided); return err }(),
				`approve review "abc": not found`},
		} {
			if tt.err == nil || tt.err.Error() != tt.want {
				t.Errorf("%s: err =\n %v\nwant\n %s", tt.name, tt.err, tt.want)
			}
		}
		if r, _ := GetReview(ctx, st, e.ID()); r.Status != ReviewPending {
			t.Errorf("status %s", r.Status)
		}
	})
	t.Run("another 2.1.0 was promoted meanwhile", func(t *testing.T) {
		st, dir := queued(t), t.TempDir()
		base := baseline()
		other := evaluate(t, base, revise(t, base, "greedy", map[string]float64{"response_speed": 0.85}), "greedy", improving, false)
		if _, err := Promote(ctx, st, dir, other, tPromote); err != nil {
			t.Fatal(err)
		}
		_, err := Approve(ctx, st, dir, e.ID(), "alice", "", tDecided)
		want := "approve review " + e.ID() + ": promote email-handler 2.1.0 (curate): version 2.1.0 is recorded with hash " + other.ID() + ": already exists"
		if err == nil || err.Error() != want || !errors.Is(err, store.ErrExists) {
			t.Fatalf("err =\n %v\nwant\n %s", err, want)
		}
		if r, _ := GetReview(ctx, st, e.ID()); r.Status != ReviewPending {
			t.Errorf("status %s, want pending (reject it)", r.Status)
		}
	})
	t.Run("a candidate altered in the store", func(t *testing.T) {
		st := queued(t)
		coll, _ := store.NewCollection[ReviewRequest](st, store.CollReviews)
		r, _ := coll.Get(ctx, e.ID())
		r.Candidate = strings.Replace(r.Candidate, "user_confirmation = 0.55", "user_confirmation = 0.5", 1)
		if err := coll.Put(ctx, r.ID, r); err != nil {
			t.Fatal(err)
		}
		s, _ := strategy.Parse("x", []byte(r.Candidate))
		_, err := Approve(ctx, st, t.TempDir(), e.ID(), "alice", "", tDecided)
		want := "approve review " + e.ID() + ": the candidate (hash " + shortHash(s.Hash()) + ") is not the one that was compared (hash " + e.ID() + ")"
		if err == nil || err.Error() != want {
			t.Fatalf("err =\n %v\nwant\n %s", err, want)
		}
	})
}
