package run

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input  float64 `toml:"input"`
	Output float64 `toml:"output"`
}

// Prices maps model names to prices. Lookups also try the model name
// without a provider prefix ("openai/gpt-4o-mini" → "gpt-4o-mini") and
// without a date suffix ("gpt-4o-mini-2024-07-18" → "gpt-4o-mini").
type Prices map[string]Price

//go:embed prices.toml
var defaultPrices string

// DefaultPrices returns the built-in price table (prices.toml).
func DefaultPrices() Prices {
	var p Prices
	if _, err := toml.Decode(defaultPrices, &p); err != nil {
		panic(fmt.Sprintf("run: built-in prices.toml: %v", err)) // embedded, tested
	}
	return p
}

// With returns a copy of p with overrides applied (the pipeline's [prices]).
func (p Prices) With(overrides map[string]Price) Prices {
	out := make(Prices, len(p)+len(overrides))
	for k, v := range p {
		out[k] = v
	}
	for k, v := range overrides {
		out[k] = v
	}
	return out
}

// Lookup finds the price of model.
func (p Prices) Lookup(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		return p.Lookup(model[i+1:])
	}
	// Dated snapshots: strip a trailing -YYYY-MM-DD or -YYYYMMDD.
	parts := strings.Split(model, "-")
	for n := len(parts) - 1; n > 0; n-- {
		if pr, ok := p[strings.Join(parts[:n], "-")]; ok {
			return pr, true
		}
	}
	return Price{}, false
}

// Cost returns the USD cost of a call, and whether the model was priced.
func (p Prices) Cost(model string, in, out int) (float64, bool) {
	pr, ok := p.Lookup(model)
	if !ok {
		return 0, false
	}
	return (float64(in)*pr.Input + float64(out)*pr.Output) / 1e6, true
}
