package strategy_test

import (
	"fmt"
	"time"

	"github.com/sextant-dev/sextant/host/internal/strategy"
)

func ExampleLoad() {
	s, err := strategy.Load("testdata/email-handler.toml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Metadata.Name, s.Metadata.Version, "from", s.Metadata.ParentVersion)
	fmt.Println("user_confirmation:", s.Parameters["user_confirmation"])
	fmt.Println("cooldown ends:", s.CooldownEnds().Format(time.DateOnly))
	// Output:
	// email-handler 2.0.0 from 1.5.0
	// user_confirmation: 0.6
	// cooldown ends: 2026-02-16
}

func ExampleParse() {
	_, err := strategy.Parse("strategy.toml", []byte(`[metadata]
name = "email-handler"
version = "2.0"

[parameters]
user_confirmation = 1.2

[evolution]
max_parameter_delta = 0.1
branch_type = "prodution"
cooldwn = "7d"
`))
	fmt.Println(err)
	// Output:
	// strategy.toml:3: metadata.version: "2.0" is not a semantic version (want e.g. 1.2.0)
	// strategy.toml:6: parameters.user_confirmation: 1.2 is outside [0, 1] (set parameter_bounds.user_confirmation = [lo, hi] to change the range)
	// strategy.toml:10: evolution.branch_type: unknown branch type "prodution" (did you mean "production"?)
	// strategy.toml:11: evolution.cooldwn: unknown key (did you mean "cooldown"?)
}

func ExampleStrategy_Decide() {
	s, _ := strategy.Load("testdata/email-handler.toml")
	for _, a := range []struct {
		action     string
		confidence float64
	}{
		{"change_account_settings", 0.99},
		{"sending_emails_to_clients", 0.99},
		{"bulk_operations", 0.4},
		{"bulk_operations", 0.8},
		{"archive_newsletter", 0.1},
	} {
		d := s.Decide(a.action, a.confidence)
		fmt.Printf("%-8s %s\n", d.Outcome, d.Reason)
	}
	// Output:
	// blocked  "change_account_settings" is in constraints.never_execute
	// confirm  "sending_emails_to_clients" is in constraints.must_confirm_before
	// confirm  "bulk_operations" is in constraints.prefer_confirm_for and confidence 0.4 < user_confirmation 0.6
	// execute  "bulk_operations" is in constraints.prefer_confirm_for but confidence 0.8 ≥ user_confirmation 0.6
	// execute  "archive_newsletter" is not constrained
}

func ExampleStrategy_Revise() {
	base, _ := strategy.Load("testdata/email-handler.toml")
	next, err := base.Revise(strategy.Revision{
		By: "sextant evolve (greedy)",
		At: time.Date(2026, 2, 17, 9, 0, 0, 0, time.UTC),
		Parameters: []strategy.Set{
			{Parameter: "response_speed", To: 0.8, Reason: "replay: success_rate +4% [+1%, +7%], n=200"},
		},
		Playbook: []strategy.Delta{
			{Op: strategy.OpAdd, Section: "reasoning", Content: "Ask before replying to more than ten recipients"},
			{Op: strategy.OpTag, ID: "tone-00001", Tag: strategy.TagHelpful},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(strategy.Diff(base, next))
	fmt.Println("write to", next.FileName())
	// Output:
	// email-handler 2.0.0 -> 2.1.0
	// parameters:
	//   response_speed 0.75 -> 0.8 (+0.05)
	// playbook:
	//   TAG tone-00001 helpful +1
	//   ADD reasoning-00002 [reasoning] "Ask before replying to more than ten recipients"
	// write to email-handler-2.1.0.toml
}

func ExampleStrategy_Apply() {
	s, _ := strategy.Load("testdata/email-handler.toml")
	res, err := s.Apply(
		strategy.Delta{Op: strategy.OpAdd, Section: "reasoning", Content: "treat invoices from unknown senders as financial actions!"},
		strategy.Delta{Op: strategy.OpRemove, ID: "tone-00001"},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range res.Duplicates {
		fmt.Println("skipped duplicate of", d.Of)
	}
	fmt.Println(res.Strategy.RenderPlaybook())

	_, err = s.Apply(strategy.Delta{Op: strategy.OpUpdate, ID: "tone-0001", Content: "x"})
	fmt.Println(err)
	// Output:
	// skipped duplicate of reasoning-00001
	// [reasoning-00001] Treat invoices from unknown senders as financial actions (+5 -0)
	// deltas.0: UPDATE tone-0001: unknown id (did you mean "tone-00001"?)
}
