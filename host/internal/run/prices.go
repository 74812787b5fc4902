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

// Prices maps model names to prices. A lookup that finds no exact entry
// tries the name without a snapshot suffix ("gpt-4o-mini-2024-07-18",
// "claude-sonnet-4-20250514", "claude-3-5-sonnet@20240620",
// "claude-3-7-sonnet-latest" → the undated name), then the same without a
// provider prefix ("openai/gpt-4o-mini" → "gpt-4o-mini").
//
// # Notes
//
// Only snapshot suffixes are stripped, never arbitrary words: a
// "gpt-4o-audio-preview" or a "claude-opus-4-5" priced as "gpt-4o" or
// "claude-opus-4" would be a wrong number, where an unpriced model is
// reported as such.
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
	if base, ok := undated(model); ok {
		if pr, ok := p[base]; ok {
			return pr, true
		}
	}
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		return p.Lookup(model[i+1:])
	}
	return Price{}, false
}

// undated strips a snapshot suffix: -YYYY-MM-DD, -YYYYMMDD, @YYYYMMDD or
// -latest.
func undated(model string) (string, bool) {
	if base, ok := strings.CutSuffix(model, "-latest"); ok && base != "" {
		return base, true
	}
	if n := len(model) - len("-2006-01-02"); n > 0 && model[n] == '-' && isDate(model[n+1:], "dddd-dd-dd") {
		return model[:n], true
	}
	if n := len(model) - len("-20060102"); n > 0 && (model[n] == '-' || model[n] == '@') && isDate(model[n+1:], "dddddddd") {
		return model[:n], true
	}
	return "", false
}

// isDate reports whether s has the shape of pattern, where 'd' is a digit
// and anything else stands for itself.
func isDate(s, pattern string) bool {
	if len(s) != len(pattern) {
		return false
	}
	for i := range len(s) {
		if pattern[i] == 'd' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != pattern[i] {
			return false
		}
	}
	return true
}

// Cost returns the USD cost of a call, and whether the model was priced.
func (p Prices) Cost(model string, in, out int) (float64, bool) {
	pr, ok := p.Lookup(model)
	if !ok {
		return 0, false
	}
	return (float64(in)*pr.Input + float64(out)*pr.Output) / 1e6, true
}
