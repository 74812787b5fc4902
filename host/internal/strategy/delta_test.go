package strategy

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

func TestApply(t *testing.T) {
	base := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	res, err := base.Apply(
		Delta{Op: OpAdd, Section: "reasoning", Content: "Ask before bulk deletes"},
		Delta{Op: OpAdd, Section: "tone", Content: "  ask before BULK-deletes! "}, // same text: skipped
		Delta{Op: OpAdd, Section: "tone", Content: "Treat invoices from unknown senders as financial actions."},
		Delta{Op: OpAdd, ID: "safety-7", Section: "safety", Content: "Never reply to phishing"},
		Delta{Op: OpAdd, Section: "safety", Content: "Never click links"},
		Delta{Op: OpTag, ID: "reasoning-00001", Tag: TagHarmful},
		Delta{Op: OpTag, ID: "reasoning-00001", Tag: TagHelpful, Count: 3},
		Delta{Op: OpTag, ID: "reasoning-00001", Tag: TagHelpful, Count: -1},
		Delta{Op: OpUpdate, ID: "tone-00001", Section: "language"},
		Delta{Op: OpRemove, ID: "safety-7"},
	)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Strategy.RenderPlaybook()
	want := strings.Join([]string{
		"[reasoning-00001] Treat invoices from unknown senders as financial actions (+7 -1)",
		"[tone-00001] Reply to clients in the language they wrote in (+2 -1)",
		"[reasoning-00002] Ask before bulk deletes (+0 -0)",
		"[safety-00008] Never click links (+0 -0)",
	}, "\n")
	if got != want {
		t.Errorf("playbook:\n%s\nwant:\n%s", got, want)
	}
	if sec := res.Strategy.Playbook[1].Section; sec != "language" {
		t.Errorf("UPDATE section: got %q", sec)
	}
	var ops []string
	for _, d := range res.Ops {
		ops = append(ops, d.String())
	}
	wantOps := []string{
		`ADD reasoning-00002 [reasoning] "Ask before bulk deletes"`,
		`ADD safety-7 [safety] "Never reply to phishing"`,
		`ADD safety-00008 [safety] "Never click links"`,
		`TAG reasoning-00001 harmful +1`,
		`TAG reasoning-00001 helpful +3`,
		`TAG reasoning-00001 helpful -1`,
		`UPDATE tone-00001 [language]`,
		`REMOVE safety-7`,
	}
	if strings.Join(ops, "\n") != strings.Join(wantOps, "\n") {
		t.Errorf("ops:\n%s\nwant:\n%s", strings.Join(ops, "\n"), strings.Join(wantOps, "\n"))
	}
	if res.Ops[3].Count != 1 {
		t.Errorf("TAG count not made explicit: %+v", res.Ops[3])
	}
	if len(res.Duplicates) != 2 || res.Duplicates[0].Of != "reasoning-00002" || res.Duplicates[1].Of != "reasoning-00001" {
		t.Errorf("duplicates = %+v", res.Duplicates)
	}
	if len(base.Playbook) != 2 || base.Playbook[0].Helpful != 5 {
		t.Errorf("Apply modified its receiver: %+v", base.Playbook)
	}
}

func TestApplyErrors(t *testing.T) {
	base := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	tests := []struct {
		name string
		ops  []Delta
		want []string
	}{
		{"unknown id", []Delta{{Op: OpUpdate, ID: "reasoning-00011", Content: "x"}},
			[]string{`deltas.0: UPDATE reasoning-00011: unknown id (did you mean "reasoning-00001"?)`}},
		{"tag and remove unknown", []Delta{{Op: OpTag, ID: "nope", Tag: TagHelpful}, {Op: OpRemove, ID: "gone-1"}},
			[]string{`deltas.0: TAG nope: unknown id`, `deltas.1: REMOVE gone-1: unknown id`}},
		{"removed earlier", []Delta{{Op: OpRemove, ID: "tone-00001"}, {Op: OpTag, ID: "tone-00001", Tag: TagHelpful}},
			[]string{`deltas.1: TAG tone-00001: unknown id`}},
		{"add existing id", []Delta{{Op: OpAdd, ID: "tone-00001", Section: "tone", Content: "Something new"}},
			[]string{`deltas.0: ADD tone-00001: id already exists`}},
		{"shapes", []Delta{
			{Op: "DELETE", ID: "x"},
			{Op: "add", Section: "x", Content: "y"},
			{Op: OpAdd, Section: "reasoning"},
			{Op: OpAdd, Content: "no section"},
			{Op: OpAdd, Section: "two words", Content: "x"},
			{Op: OpAdd, Section: "s", Content: "x", Tag: TagHelpful},
			{Op: OpAdd, Section: "s", Content: "bad \xff byte"},
			{Op: OpUpdate, ID: "tone-00001"},
			{Op: OpUpdate, ID: "tone-00001", Content: "   "},
			{Op: OpUpdate},
			{Op: OpTag, ID: "tone-00001", Tag: "helpfull"},
			{Op: OpTag, ID: "tone-00001", Tag: TagHelpful, Content: "x"},
			{Op: OpRemove, ID: "tone-00001", Content: "x"},
		}, []string{
			`deltas.0: unknown op "DELETE" (want ADD, UPDATE, TAG or REMOVE)`,
			`deltas.1: unknown op "add" (want ADD, UPDATE, TAG or REMOVE)`,
			`deltas.2: ADD needs content`,
			`deltas.3: ADD needs a section`,
			`deltas.4: ADD: invalid section "two words" (want letters, digits, '_' and '-')`,
			`deltas.5: ADD takes no tag or count`,
			`deltas.6: ADD: content is not valid UTF-8`,
			`deltas.7: UPDATE tone-00001 needs content or a section`,
			`deltas.8: UPDATE tone-00001: content is blank`,
			`deltas.9: UPDATE needs an id`,
			`deltas.10: TAG tone-00001: unknown tag "helpfull" (did you mean "helpful"?)`,
			`deltas.11: TAG tone-00001 takes no content or section`,
			`deltas.12: REMOVE tone-00001 takes only an id`,
		}},
		{"control characters stay escaped", []Delta{{Op: OpRemove, ID: "a\nb"}},
			[]string{`deltas.0: REMOVE a\nb: unknown id`}},
		{"counter below zero", []Delta{{Op: OpTag, ID: "tone-00001", Tag: TagHarmful, Count: -2}},
			[]string{`deltas.0: TAG tone-00001: harmful would become -1`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := base.Apply(tc.ops...)
			if err == nil {
				t.Fatalf("Apply succeeded: %s", res.Strategy.RenderPlaybook())
			}
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Errorf("errors.Is(err, sdk.ErrInvalid) = false")
			}
			if got, want := err.Error(), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("Apply error:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestNormalizeContent(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Ask before bulk deletes!", "ask before bulk deletes"},
		{"  ask before   BULK-deletes ", "ask before bulk deletes"},
		{"Prüfe   Rechnungen.", "prüfe rechnungen"},
		{"---", ""},
		{"v2.0 rules", "v2 0 rules"},
	}
	for _, tc := range tests {
		if got := NormalizeContent(tc.in); got != tc.want {
			t.Errorf("NormalizeContent(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRevise(t *testing.T) {
	base := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	next, err := base.Revise(Revision{
		By:         "sextant evolve (conservative)",
		At:         time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC),
		BranchType: Experimental,
		Parameters: []Set{{Parameter: "autonomy_level", To: 0.75, Reason: "half step"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	md := next.Metadata
	if md.Version != "2.1.0" || md.ParentVersion != "2.0.0" || md.CreatedBy != "sextant evolve (conservative)" || next.Evolution.BranchType != Experimental {
		t.Errorf("metadata = %+v, branch %s", md, next.Evolution.BranchType)
	}
	last := next.ChangeLog[len(next.ChangeLog)-1]
	if last.Version != "2.1.0" || len(last.Changes) != 1 || last.Changes[0] != (ParameterChange{"autonomy_level", 0.7, 0.75, "half step"}) || last.Playbook != nil {
		t.Errorf("change log entry = %+v", last)
	}
	if base.Metadata.Version != "2.0.0" || base.Parameters["autonomy_level"] != 0.7 || len(base.ChangeLog) != 2 {
		t.Errorf("Revise modified its receiver")
	}

	_, err = base.Revise(Revision{
		BranchType: "trunk",
		Parameters: []Set{
			{Parameter: "autonomy", To: 0.5},
			{Parameter: "max_retries", To: 6},
			{Parameter: "response_speed", To: -0.1},
		},
	})
	want := strings.Join([]string{
		`revise email-handler 2.0.0: revision: missing author (By)`,
		`revision: missing time (At)`,
		`revision: unknown branch type "trunk" (want production, experimental or archived)`,
		`parameters.0: no parameter "autonomy" (did you mean "autonomy_level"?)`,
		`parameters.1: max_retries: 6 is outside [0, 5]`,
		`parameters.2: response_speed: -0.1 is outside [0, 1]`,
	}, "\n")
	if err == nil || err.Error() != want || !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("Revise error:\n%v\nwant:\n%s", err, want)
	}

	_, err = base.Revise(Revision{By: "x", At: time.Unix(0, 0), Playbook: []Delta{{Op: OpRemove, ID: "nope"}}})
	if want := "revise email-handler 2.0.0: deltas.0: REMOVE nope: unknown id"; err == nil || err.Error() != want {
		t.Errorf("Revise error = %v, want %q", err, want)
	}
}
