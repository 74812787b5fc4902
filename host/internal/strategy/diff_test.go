package strategy

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

func candidate(t *testing.T) (*Strategy, *Strategy) {
	t.Helper()
	base := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	cand, err := base.Revise(revision())
	if err != nil {
		t.Fatal(err)
	}
	// Hand edits a mutator would never make, so the diff shows every kind.
	cand.Parameters["tone_formality"] = 0.4
	delete(cand.Parameters, "max_retries")
	delete(cand.ParameterBounds, "max_retries")
	cand.Constraints.NeverExecute = []string{"forward_to_external_addresses"}
	cand.Constraints.MustConfirmBefore = append(cand.Constraints.MustConfirmBefore, "change_account_settings")
	cand.Evolution.MaxParameterDelta = 0.2
	cand.Evolution.Cooldown = 36 * time.Hour
	cand.ParameterBounds = map[string]Bounds{"response_speed": {0.5, 1}}
	return base, cand
}

func TestDiff(t *testing.T) {
	base, cand := candidate(t)
	got := Diff(base, cand).String()
	want := `email-handler 2.0.0 -> 2.1.0
parameters:
  max_retries    3 (removed)
  response_speed 0.75 -> 0.85 (+0.1)
  tone_formality (new) 0.4
constraints:
  never_execute: - change_account_settings
  must_confirm_before: + change_account_settings
limits:
  evolution.max_parameter_delta: 0.1 -> 0.2
  evolution.cooldown: 7d -> 36h
  parameter_bounds.response_speed: [0, 1] -> [0.5, 1]
playbook:
  UPDATE reasoning-00001 "Treat invoices and payment links from unknown senders as financial actions"
  TAG tone-00001 harmful +1
  ADD reasoning-00002 [reasoning] "Ask before replying to a thread with more than ten recipients"
`
	if got != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", got, want)
	}
}

func TestDiffSDK(t *testing.T) {
	base, cand := candidate(t)
	got := Diff(base, cand).SDK()
	want := sdk.StrategyDiff{
		Parameters: []sdk.ParameterChange{
			{Name: "max_retries", From: 3, To: 0},
			{Name: "response_speed", From: 0.75, To: 0.85},
			{Name: "tone_formality", From: 0, To: 0.4},
		},
		Playbook: []sdk.PlaybookChange{
			{Op: "UPDATE", ID: "reasoning-00001", Content: "Treat invoices and payment links from unknown senders as financial actions"},
			{Op: "TAG", ID: "tone-00001", Content: "harmful +1"},
			{Op: "ADD", ID: "reasoning-00002", Section: "reasoning", Content: "Ask before replying to a thread with more than ten recipients"},
		},
		Constraints: []string{
			"never_execute: - change_account_settings",
			"must_confirm_before: + change_account_settings",
			"evolution.max_parameter_delta: 0.1 -> 0.2",
			"evolution.cooldown: 7d -> 36h",
			"parameter_bounds.response_speed: [0, 1] -> [0.5, 1]",
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("SDK diff:\n%s\nwant:\n%s", g, w)
	}
}

func TestDiffEmpty(t *testing.T) {
	base := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	r := mustLoad(t, filepath.Join("testdata", "hash", "reformatted.toml"))
	d := Diff(base, r)
	if !d.Empty() || d.String() != "email-handler 2.0.0 -> 2.0.0\n  no changes\n" {
		t.Errorf("Diff of the same strategy:\n%s", d)
	}
	if sd := d.SDK(); sd.Parameters != nil || sd.Playbook != nil || sd.Constraints != nil {
		t.Errorf("SDK diff of the same strategy = %+v", sd)
	}
	// Changing only the spelling of an action is not a change.
	r.Constraints.NeverExecute = []string{"Change-Account-Settings", "forward_to_external_addresses"}
	if d := Diff(base, r); !d.Empty() {
		t.Errorf("respelt action counted as a change:\n%s", d)
	}
}

// TestDiffReplays: applying a diff's playbook operations to the baseline
// gives the candidate's playbook, whatever the edits.
func TestDiffReplays(t *testing.T) {
	base := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	cand := base.Clone()
	cand.Playbook = []Bullet{
		{ID: "tone-00001", Section: "style", Content: "Reply in the client's language", Helpful: 0, Harmful: 4, Neutral: 2},
		{ID: "new-1", Section: "new", Content: "Fresh advice", Helpful: 3},
	}
	ch := Diff(base, cand)
	res, err := base.Apply(ch.Playbook...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Strategy.Playbook, cand.Playbook) {
		t.Errorf("replayed playbook:\n%+v\nwant:\n%+v", res.Strategy.Playbook, cand.Playbook)
	}
	if ch.Reordered {
		t.Errorf("Reordered set with one shared bullet")
	}
	swapped := base.Clone()
	swapped.Playbook[0], swapped.Playbook[1] = swapped.Playbook[1], swapped.Playbook[0]
	if d := Diff(base, swapped); !d.Reordered || d.Empty() || d.SDK().Constraints[0] != "playbook: bullets reordered" {
		t.Errorf("reorder not reported: %+v", d)
	}
}
