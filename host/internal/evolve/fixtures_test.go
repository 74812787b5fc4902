package evolve

import (
	"context"
	"fmt"
	"time"

	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

var t0 = time.Date(2026, 2, 9, 10, 30, 0, 0, time.UTC)

// baseline is the email-handler strategy of DESIGN §5, version 2.0.0.
func baseline() *strategy.Strategy {
	return &strategy.Strategy{
		Metadata: strategy.Metadata{Name: "email-handler", Version: "2.0.0", ParentVersion: "1.5.0", CreatedAt: t0, CreatedBy: "test"},
		Parameters: map[string]float64{
			"response_speed": 0.75, "user_confirmation": 0.60, "autonomy_level": 0.70,
		},
		Constraints: strategy.Constraints{
			MustConfirmBefore: []string{"sending_emails_to_clients", "deleting_important_messages"},
			NeverExecute:      []string{"forward_to_external_addresses", "change_account_settings"},
			PreferConfirmFor:  []string{"bulk_operations", "financial_actions"},
		},
		Evolution: strategy.Evolution{MaxParameterDelta: 0.10, Cooldown: 7 * 24 * time.Hour, BranchType: strategy.Production},
		Playbook: []strategy.Bullet{
			{ID: "reasoning-00001", Section: "reasoning", Content: "Treat invoices from unknown senders as financial actions", Helpful: 5, Neutral: 1},
		},
	}
}

// candidate derives 2.1.0 from b, created at created, changing params.
func candidate(b *strategy.Strategy, created time.Time, params map[string]float64) *strategy.Strategy {
	c := b.Clone()
	c.Metadata.Version, c.Metadata.ParentVersion, c.Metadata.CreatedAt = "2.1.0", b.Metadata.Version, created
	for k, v := range params {
		c.Parameters[k] = v
	}
	return c
}

// outcomes builds n tasks "t000".. with the given success counts:
// bothPass, bothFail, lost (pass→fail), gained (fail→pass).
func outcomes(bothPass, bothFail, lost, gained int) []sdk.TaskOutcome {
	var out []sdk.TaskOutcome
	add := func(k int, b, c bool) {
		for range k {
			out = append(out, sdk.TaskOutcome{
				Task:      fmt.Sprintf("t%03d", len(out)),
				Baseline:  sdk.TaskResult{Success: b, Reward: indicator(b), Steps: 10, Tokens: 1000, CostUSD: 0.01, Confidence: 1},
				Candidate: sdk.TaskResult{Success: c, Reward: indicator(c), Steps: 9, Tokens: 900, CostUSD: 0.009, Confidence: 1},
			})
		}
	}
	add(bothPass, true, true)
	add(bothFail, false, false)
	add(lost, true, false)
	add(gained, false, true)
	return out
}

// check runs the built-in gate name on c with config.
func check(name string, c *sdk.Comparison, config map[string]any) (*sdk.Verdict, error) {
	g, err := Builtin(name, Options{Seed: 1})
	if err != nil {
		return nil, err
	}
	cc := *c
	cc.Config = config
	return g.Check(context.Background(), &cc)
}
