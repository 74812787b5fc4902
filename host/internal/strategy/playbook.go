package strategy

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// String renders the bullet as the prompt shows it:
// `[id] content (+helpful -harmful)`, on one line.
func (b Bullet) String() string {
	return fmt.Sprintf("[%s] %s (+%d -%d)", b.ID, oneLine(b.Content), b.Helpful, b.Harmful)
}

// RenderPlaybook renders the playbook compactly for a prompt, one line per
// bullet in playbook order (what `{{ playbook }}` expands to). An empty
// playbook renders as "".
func (s *Strategy) RenderPlaybook() string {
	var b strings.Builder
	for i, bl := range s.Playbook {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(bl.String())
	}
	return b.String()
}

// EstimateTokens is a rough token count for budget checks: one token per
// four characters, rounded up. It needs no tokenizer and is close for
// English prose with common BPE tokenizers; code and non-Latin scripts use
// more tokens per character, so keep a budget's margin.
func EstimateTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}

// PlaybookTokens estimates the tokens the rendered playbook adds to a prompt.
func (s *Strategy) PlaybookTokens() int {
	return EstimateTokens(s.RenderPlaybook())
}

// OverBudget reports whether the rendered playbook exceeds
// evolution.max_playbook_tokens, with the estimate; a strategy without a
// budget is never over it.
func (s *Strategy) OverBudget() (tokens int, over bool) {
	tokens = s.PlaybookTokens()
	return tokens, s.Evolution.MaxPlaybookTokens > 0 && tokens > s.Evolution.MaxPlaybookTokens
}
