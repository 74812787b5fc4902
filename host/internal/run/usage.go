package run

import (
	"errors"
	"fmt"
	"math"

	"github.com/sextant-dev/sextant/sdk"
)

// MaxCallTokens is the most tokens (input or output) one provider call may
// report. No model reads or writes a billion tokens in one call; a usage
// above it is a broken provider, and accounting it would end every budget.
const MaxCallTokens = 1_000_000_000

// ErrUsage marks a provider answer whose usage cannot be true: negative or
// absurd token counts, a negative or non-finite cost. Such an answer is
// never accounted: negative usage would switch the token and cost limits
// off.
var ErrUsage = errors.New("impossible usage")

// checkUsage returns an error naming the provider when its answer's usage
// (and the cost computed from it) cannot be accounted.
func checkUsage(provider string, u sdk.Usage, cost float64) error {
	var bad string
	switch {
	case u.InputTokens < 0 || u.InputTokens > MaxCallTokens:
		bad = fmt.Sprintf("input_tokens %d", u.InputTokens)
	case u.OutputTokens < 0 || u.OutputTokens > MaxCallTokens:
		bad = fmt.Sprintf("output_tokens %d", u.OutputTokens)
	case math.IsNaN(cost) || math.IsInf(cost, 0) || cost < 0:
		return fmt.Errorf("provider %q: %w: cost %v (want a finite amount >= 0)", provider, ErrUsage, cost)
	default:
		return nil
	}
	return fmt.Errorf("provider %q: %w: %s (want 0..%d per call)", provider, ErrUsage, bad, MaxCallTokens)
}

// CheckUsage returns an error (matching ErrUsage) naming the provider when
// an answer's usage, or the cost computed from it, cannot be accounted:
// the check every recorded call passes before it is recorded.
func CheckUsage(provider string, u sdk.Usage, cost float64) error {
	return checkUsage(provider, u, cost)
}
