package replay

import (
	"context"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// recordedOnly returns providers with the pipeline's names and request
// defaults (so requests hash exactly as they did live) that never reach a
// real provider: a call without a recording fails at once, naming itself.
func recordedOnly(live *run.Providers) *run.Providers {
	return live.Map(func(p *run.Provider) *run.Provider {
		c := *p
		c.Plugin = missing{}
		c.Retries = 0
		c.Fallback = nil
		return &c
	})
}

// missing is the provider behind a replay: everything it is asked was not
// recorded (recorded answers are served before a provider is asked).
type missing struct{}

func (missing) Describe() sdk.Info {
	return sdk.Info{Name: "recorded", Kind: sdk.KindProvider, Version: "1.0.0", API: sdk.APIVersion}
}

func (missing) Chat(_ context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	return nil, &sdk.Error{Code: sdk.CodeBadRequest, Message: "no recording for this call (the replayed strategy asked something the task never asked; --on-miss live sends it to the provider)"}
}
