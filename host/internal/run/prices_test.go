package run

import (
	"math"
	"testing"
)

func TestPriceLookup(t *testing.T) {
	p := DefaultPrices()
	for _, tc := range []struct {
		model string
		want  Price
		ok    bool
	}{
		{"gpt-4o-mini", Price{0.15, 0.60}, true},
		{"gpt-4o-mini-2024-07-18", Price{0.15, 0.60}, true},
		{"gpt-4o-2024-08-06", Price{2.50, 10.00}, true},
		{"claude-sonnet-4-20250514", Price{3, 15}, true},
		{"claude-3-5-haiku-20241022", Price{0.80, 4}, true},
		{"claude-3-5-sonnet@20240620", Price{3, 15}, true},
		{"claude-3-7-sonnet-latest", Price{3, 15}, true},
		{"claude-opus-4-1-20250805", Price{15, 75}, true},
		{"claude-opus-4-5-20251101", Price{5, 25}, true},
		{"openai/gpt-4o", Price{2.50, 10.00}, true},
		{"openrouter/openai/gpt-4.1-mini", Price{0.40, 1.60}, true},
		{"anthropic/claude-haiku-4-5-20251001", Price{1, 5}, true},
		{"models/gemini-2.5-flash", Price{0.30, 2.50}, true},
		{"script", Price{}, true},
		// Not a snapshot of a listed model: unpriced, never a neighbour's price.
		{"gpt-4o-audio-preview", Price{}, false},
		{"gpt-4o-mini-2024", Price{}, false},
		{"gpt-4o-mini-2024-7-18", Price{}, false},
		{"claude-haiku-4", Price{}, false},
		{"llama3.1:8b", Price{}, false},
		{"-latest", Price{}, false},
		{"", Price{}, false},
	} {
		t.Run(tc.model, func(t *testing.T) {
			got, ok := p.Lookup(tc.model)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tc.model, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestPricesWith(t *testing.T) {
	base := DefaultPrices()
	p := base.With(map[string]Price{
		"gpt-4o-mini":         {Input: 0.10, Output: 0.50},
		"my-finetune":         {Input: 1, Output: 2},
		"openrouter/gpt-4o":   {Input: 3, Output: 12},
		"gpt-4o-mini-2024-07": {Input: 9, Output: 9},
	})
	for _, tc := range []struct {
		model string
		want  Price
	}{
		{"gpt-4o-mini", Price{0.10, 0.50}},
		{"gpt-4o-mini-2024-07-18", Price{0.10, 0.50}},
		{"my-finetune-20250101", Price{1, 2}},
		{"openrouter/gpt-4o", Price{3, 12}},   // the exact override wins
		{"openai/gpt-4o", Price{2.50, 10.00}}, // other prefixes keep the table's
		{"gpt-4o", Price{2.50, 10.00}},
	} {
		if got, ok := p.Lookup(tc.model); !ok || got != tc.want {
			t.Errorf("Lookup(%q) = %v, %v; want %v", tc.model, got, ok, tc.want)
		}
	}
	if got, _ := base.Lookup("gpt-4o-mini"); got != (Price{0.15, 0.60}) {
		t.Errorf("With changed its receiver: %v", got)
	}
	if _, ok := base.Lookup("my-finetune"); ok {
		t.Error("With added to its receiver")
	}
}

func TestPriceCost(t *testing.T) {
	p := DefaultPrices().With(map[string]Price{"even": {Input: 2, Output: 8}})
	for _, tc := range []struct {
		name    string
		model   string
		in, out int
		want    float64
		ok      bool
	}{
		{"input and output", "gpt-4o-mini", 1000, 500, 0.00045, true},
		{"a million each", "claude-opus-4-1", 1_000_000, 1_000_000, 90, true},
		{"override", "even", 250_000, 125_000, 1.5, true},
		{"dated", "gpt-4.1-2025-04-14", 10_000, 2_000, 0.036, true},
		{"no tokens", "gpt-4o", 0, 0, 0, true},
		{"free", "script", 123, 456, 0, true},
		{"unpriced", "mystery-model", 1000, 1000, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := p.Cost(tc.model, tc.in, tc.out)
			if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Cost(%q, %d, %d) = %v, %v; want %v, %v", tc.model, tc.in, tc.out, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestDefaultPrices(t *testing.T) {
	p := DefaultPrices()
	if len(p) < 20 {
		t.Errorf("%d prices", len(p))
	}
	for m, pr := range p {
		if pr.Input < 0 || pr.Output < 0 || (m != "script" && (pr.Input == 0 || pr.Output < pr.Input)) {
			t.Errorf("%s: implausible price %+v", m, pr)
		}
		if base, ok := undated(m); ok {
			t.Errorf("%s: a snapshot name; list %s", m, base)
		}
	}
}
