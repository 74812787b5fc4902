package evolve

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

func acePlaybook() *strategy.Strategy {
	return &strategy.Strategy{
		Metadata:   strategy.Metadata{Name: "support", Version: "1.0.0", CreatedAt: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), CreatedBy: "test"},
		Parameters: map[string]float64{"p": 0.5},
		Evolution:  strategy.Evolution{MaxParameterDelta: 0.1, BranchType: strategy.Experimental},
		Playbook: []strategy.Bullet{
			{ID: "a-00001", Section: "a", Content: "Refunds within 30 days", Helpful: 4},
			{ID: "a-00002", Section: "a", Content: "Always promise next-day delivery", Harmful: 2},
			{ID: "a-00003", Section: "a", Content: "Shipping to the EU takes 5 to 7 days"},
		},
	}
}

// TestTagCitations checks the counts against known replay outcomes.
func TestTagCitations(t *testing.T) {
	ok := func(task string, cited ...string) replay.Result {
		return replay.Result{Task: task, Cited: cited, Outcome: sdk.TaskResult{Success: true}}
	}
	bad := func(task string, cited ...string) replay.Result {
		return replay.Result{Task: task, Cited: cited}
	}
	results := []replay.Result{
		ok("t1", "a-00001"), ok("t2", "a-00001", "a-00003"), bad("t3", "a-00002"), bad("t4", "a-00002", "a-00001"),
		ok("t5"), {Task: "t6", Cited: []string{"a-00003"}, Skipped: true}, ok("t7", "gone-00009"),
	}
	var uses []Use
	for _, r := range results {
		if u, ok := UseOfReplay(r); ok {
			uses = append(uses, u)
		}
	}
	uses = append(uses, Use{Task: "t8", Cited: []string{"a-00003"}, Tag: TagOfReward(0)})
	base := acePlaybook()
	ops := TagCitations(uses, base.Playbook)
	var got []string
	for _, d := range ops {
		got = append(got, d.String()+" ("+d.Reason+")")
	}
	want := []string{
		"TAG a-00001 helpful +2 (cited by 2 tasks that succeeded: t1, t2)",
		"TAG a-00001 harmful +1 (cited by 1 task that failed: t4)",
		"TAG a-00002 harmful +2 (cited by 2 tasks that failed: t3, t4)",
		"TAG a-00003 helpful +1 (cited by 1 task that succeeded: t2)",
		"TAG a-00003 neutral +1 (cited by 1 task that had no verdict: t8)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("TagCitations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	next, err := base.Revise(strategy.Revision{By: "test", At: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), Playbook: ops})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range [][3]int{{6, 1, 0}, {0, 4, 0}, {1, 0, 1}} {
		b := next.Playbook[i]
		if g := [3]int{b.Helpful, b.Harmful, b.Neutral}; g != w {
			t.Errorf("%s: counters %v, want %v", b.ID, g, w)
		}
	}
}

func TestLearn(t *testing.T) {
	at := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	h := strategy.Hygiene{PruneHarmful: 3}
	t.Run("tags, curates and prunes in one version", func(t *testing.T) {
		l := Lesson{Use: Use{Task: "t9", Cited: []string{"a-00002"}, Tag: strategy.TagHarmful},
			Delta: map[string]any{"operations": []any{map[string]any{"op": "ADD", "section": "a", "content": "Returns are free within 14 days"}}}}
		got, err := Learn(acePlaybook(), l, h, at)
		if err != nil || got.Rejected != nil {
			t.Fatalf("Learn: %v, rejected %v", err, got.Rejected)
		}
		s := got.Strategy
		if s.Metadata.Version != "1.1.0" || s.Metadata.ParentVersion != "1.0.0" {
			t.Fatalf("version %s parent %s", s.Metadata.Version, s.Metadata.ParentVersion)
		}
		var ops []string
		for _, d := range s.ChangeLog[len(s.ChangeLog)-1].Playbook {
			ops = append(ops, d.String())
		}
		want := `TAG a-00002 harmful +1; ADD a-00004 [a] "Returns are free within 14 days"; REMOVE a-00002`
		if strings.Join(ops, "; ") != want {
			t.Fatalf("ops %q, want %q", strings.Join(ops, "; "), want)
		}
	})
	t.Run("a bad curator delta is left out, the counts are kept", func(t *testing.T) {
		l := Lesson{Use: Use{Task: "t9", Cited: []string{"a-00001"}, Tag: strategy.TagHelpful},
			Delta: map[string]any{"operations": []any{map[string]any{"op": "UPDATE", "id": "a-00042", "content": "x"}}}}
		got, err := Learn(acePlaybook(), l, h, at)
		if err != nil || !errors.Is(got.Rejected, ErrRejected) || got.Strategy == nil {
			t.Fatalf("Learn: %v, rejected %v", err, got.Rejected)
		}
		if b := got.Strategy.Playbook[0]; b.Helpful != 5 {
			t.Fatalf("helpful %d, want 5", b.Helpful)
		}
	})
	t.Run("nothing to learn", func(t *testing.T) {
		got, err := Learn(acePlaybook(), Lesson{Use: Use{Task: "t9", Tag: strategy.TagHelpful}}, h, at)
		if err != nil || got.Strategy != nil {
			t.Fatalf("Learn: %v, %v", err, got.Strategy)
		}
	})
	t.Run("production never learns online", func(t *testing.T) {
		s := acePlaybook()
		s.Evolution.BranchType = strategy.Production
		_, err := Learn(s, Lesson{Use: Use{Task: "t9", Cited: []string{"a-00001"}, Tag: strategy.TagHelpful}}, h, at)
		if !errors.Is(err, ErrNotOnline) {
			t.Fatalf("err %v, want ErrNotOnline", err)
		}
		if want := "learn online: strategy support 1.0.0 is on the production branch: only experimental strategies learn online"; err.Error() != want {
			t.Fatalf("err %q, want %q", err, want)
		}
	})
}
