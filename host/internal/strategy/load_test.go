package strategy

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// TestLoadInvalid checks every problem of each fixture, in order, with its
// line. Each want line is the problem after the file name.
func TestLoadInvalid(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"change-log", []string{
			`:11: change_log.0.changes.0.parameter: missing`,
			`:13: change_log.0.playbook.0: unknown op "DELETE" (want ADD, UPDATE, TAG or REMOVE)`,
			`:14: change_log.0.playbook.1: TAG x-00001: unknown tag "helpfull" (did you mean "helpful"?)`,
			`:15: change_log.0.playbook.2.count: must not be 0 (leave it out for 1)`,
			`:16: change_log.0.playbook.3: ADD needs content`,
			`:20: change_log.1.version: duplicate version 1.1.0 (first at line 10)`,
			`:21: change_log.1.date: want a datetime with a time zone offset such as 2026-02-09T10:30:00Z, got local date`,
		}},
		{"empty-values", []string{
			`:2: metadata.name: must not be empty (a lowercase name such as "email-handler")`,
			`:3: metadata.version: must not be empty (a semantic version such as 1.0.0)`,
			`:5: evolution.max_parameter_delta: missing (the largest change one revision may make to a parameter, e.g. 0.1)`,
			`:6: evolution.branch_type: must not be empty (want production, experimental or archived)`,
			`:8: playbook.0.id: missing (e.g. "reasoning-00001")`,
		}},
		{"missing", []string{
			`: metadata: missing table (name and version are required)`,
			`: evolution: missing table (max_parameter_delta and branch_type are required)`,
		}},
		{"syntax", []string{
			`:4: toml: key 'metadata.name' has already been defined`,
		}},
		{"types", []string{
			`:3: metadata.version: want a string, got integer 2`,
			`:4: metadata.created_at: want a datetime, got a string (write it without quotes: 2026-02-09T10:30:00Z)`,
			`:7: parameters.response_speed: want a number, got string "fast"`,
			`:9: parameters.autonomy_level: want a finite number, got float NaN`,
			`:12: parameter_bounds.user_confirmation.1: want a number, got string "1"`,
			`:15: constraints.never_execute: want an array of strings, got string "change_account_settings"`,
			`:16: constraints.must_confirm_before.1: want a string, got integer 3`,
			`:19: evolution.max_parameter_delta: want a number, got string "0.1"`,
			`:20: evolution.cooldown: want a duration such as "7d", got integer 7`,
			`:21: evolution.requires_human_review: want a boolean, got string "no"`,
			`:28: playbook.0.helpful: want an integer, got float 1.5`,
			`:32: change_log.0.date: want a datetime with a time zone offset such as 2026-02-09T10:30:00Z, got local datetime`,
		}},
		{"unknown-keys", []string{
			`:3: metadata.verison: unknown key (did you mean "version"?)`,
			`:10: constraints.never_excute: unknown key (did you mean "never_execute"?)`,
			`:14: evolution.cooldown_period_days: unknown key (did you mean "cooldown"?)`,
			`:17: evolution_metadata: unknown key (did you mean "evolution"?)`,
			`:23: playbook.0.contnet: unknown key (did you mean "content"?)`,
			`:28: change_log.0.changes.0.paramter: unknown key (did you mean "parameter"?)`,
		}},
		{"values", []string{
			`:2: metadata.name: invalid name "Email Handler" (want lowercase words joined by - or _)`,
			`:3: metadata.version: "2.0" is not a semantic version (want e.g. 1.2.0)`,
			`:7: parameters.response_speed: 1.5 is outside [0, 1] (set parameter_bounds.response_speed = [lo, hi] to change the range)`,
			`:8: parameters.autonomy_level: -0.1 is outside [0, 1] (set parameter_bounds.autonomy_level = [lo, hi] to change the range)`,
			`:9: parameters.max_retries: 7 is outside its bounds [0, 5]`,
			`:10: parameters."bad name": invalid parameter name (want letters, digits and _, not starting with a digit)`,
			`:14: parameter_bounds.max_retry: no parameter "max_retry" (did you mean "max_retries"?)`,
			`:17: constraints.must_confirm_before.1: "delete_all" is also in never_execute (an action belongs to one list)`,
			`:18: constraints.never_execute.2: "change_settings" is listed twice`,
			`:19: constraints.prefer_confirm_for: needs parameters.user_confirmation (the confidence below which to confirm)`,
			`:22: evolution.max_parameter_delta: -0.1 is negative`,
			`:23: evolution.cooldown: "7 days" is not a duration (want e.g. "7d", "36h" or "1d12h")`,
			`:24: evolution.branch_type: unknown branch type "prodution" (did you mean "production"?)`,
			`:25: evolution.max_playbook_tokens: -5 is negative`,
			`:31: playbook.0.helpful: negative counter -1`,
			`:34: playbook.1.id: duplicate id "reasoning-00001" (first at line 28)`,
			`:35: playbook.1.section: invalid section "reasoning tips" (want letters, digits, '_' and '-')`,
			`:36: playbook.1.content: must not be empty`,
			`:37: playbook.1.harmful: negative counter -2`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join("testdata", "invalid", tc.name+".toml")
			s, err := Load(file)
			if err == nil {
				t.Fatalf("Load(%s) = %v, want an error", file, s)
			}
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Errorf("errors.Is(err, sdk.ErrInvalid) = false for %v", err)
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = file + w
			}
			if got := err.Error(); got != strings.Join(want, "\n") {
				t.Errorf("Load(%s) error:\n%s\nwant:\n%s", file, got, strings.Join(want, "\n"))
			}
		})
	}
}

func TestLoadValid(t *testing.T) {
	s, err := Load(filepath.Join("testdata", "email-handler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"name", s.Metadata.Name, "email-handler"},
		{"version", s.Metadata.Version, "2.0.0"},
		{"parent", s.Metadata.ParentVersion, "1.5.0"},
		{"created_at", s.Metadata.CreatedAt, time.Date(2026, 2, 9, 10, 30, 0, 0, time.UTC)},
		{"user_confirmation", s.Parameters["user_confirmation"], 0.6},
		{"integer parameter", s.Parameters["max_retries"], 3.0},
		{"bounds", s.Bounds("max_retries"), Bounds{0, 5}},
		{"default bounds", s.Bounds("response_speed"), Bounds{0, 1}},
		{"never", strings.Join(s.Constraints.NeverExecute, ","), "forward_to_external_addresses,change_account_settings"},
		{"cooldown", s.Evolution.Cooldown, 7 * 24 * time.Hour},
		{"cooldown ends", s.CooldownEnds(), time.Date(2026, 2, 16, 10, 30, 0, 0, time.UTC)},
		{"branch", s.Evolution.BranchType, Production},
		{"budget", s.Evolution.MaxPlaybookTokens, 400},
		{"bullets", len(s.Playbook), 2},
		{"bullet", s.Playbook[1], Bullet{ID: "tone-00001", Section: "tone", Content: "Reply to clients in the language they wrote in", Helpful: 2, Harmful: 1}},
		{"log", len(s.ChangeLog), 2},
		{"log change", s.ChangeLog[1].Changes[1], ParameterChange{"user_confirmation", 0.65, 0.6, "approval rate 98%, n=200"}},
		{"log op", s.ChangeLog[1].Playbook[1], Delta{Op: OpTag, ID: "reasoning-00001", Tag: TagHelpful, Count: 2}},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestLoadUnreadable(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "no-such.toml"))
	want := "testdata/no-such.toml: read strategy: no such file or directory"
	if err == nil || err.Error() != want || !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("Load = %v, want %q matching sdk.ErrInvalid", err, want)
	}
}

// TestValidateInCode checks a strategy built in code: the same rules, key
// paths but no file or lines.
func TestValidateInCode(t *testing.T) {
	s := &Strategy{
		Metadata:   Metadata{Name: "x", Version: "1.0.0", ParentVersion: "1.0.0"},
		Parameters: map[string]float64{"a": 2},
		Constraints: Constraints{
			NeverExecute:      []string{"rm"},
			MustConfirmBefore: []string{" RM "},
		},
		Evolution: Evolution{BranchType: "main", Cooldown: 1500 * time.Millisecond},
		Playbook:  []Bullet{{ID: "a b", Section: "s", Content: "c"}},
	}
	want := strings.Join([]string{
		`metadata.parent_version: 1.0.0 is not older than version 1.0.0`,
		`parameters.a: 2 is outside [0, 1] (set parameter_bounds.a = [lo, hi] to change the range)`,
		`constraints.must_confirm_before.0: " RM " is also in never_execute (an action belongs to one list)`,
		`evolution.cooldown: 1.5s is not a whole number of seconds`,
		`evolution.branch_type: unknown branch type "main" (want production, experimental or archived)`,
		`playbook.0.id: invalid id "a b" (want letters, digits, '.', '_' and '-')`,
	}, "\n")
	err := s.Validate()
	if err == nil || err.Error() != want {
		t.Errorf("Validate() =\n%v\nwant\n%s", err, want)
	}
	if !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("errors.Is(err, sdk.ErrInvalid) = false")
	}
}
