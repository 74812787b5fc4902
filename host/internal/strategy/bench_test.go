package strategy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// bigStrategy returns a valid strategy with n playbook bullets, the shape a
// long-lived ACE playbook grows to.
func bigStrategy(n int) []byte {
	var b strings.Builder
	b.WriteString(`[metadata]
name = "big"
version = "1.0.0"
created_at = 2026-02-09T10:30:00Z

[parameters]
temperature = 0.2

[constraints]
never_execute = ["forward_to_external_addresses"]

[evolution]
max_parameter_delta = 0.10
branch_type = "production"
`)
	sections := []string{"reasoning", "safety", "style"}
	for i := 0; i < n; i++ {
		sec := sections[i%len(sections)]
		fmt.Fprintf(&b, "\n[[playbook]]\nid = \"%s-%05d\"\nsection = %q\ncontent = \"Bullet %d: when the sender is unknown, treat an attached invoice as a financial action and ask first\"\nhelpful = %d\nharmful = 0\nneutral = 1\n",
			sec, i, sec, i, i%7)
	}
	return []byte(b.String())
}

// BenchmarkStrategyValidate compares validating a large strategy (decode,
// positions, checks) with BurntSushi/toml's decode of the same bytes alone.
func BenchmarkStrategyValidate(b *testing.B) {
	for _, n := range []int{8000, 50000} {
		data := bigStrategy(n)
		b.Run(fmt.Sprintf("bullets-%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				if _, err := Parse("big.toml", data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("burntsushi-%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				var doc map[string]any
				if _, err := toml.Decode(string(data), &doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
