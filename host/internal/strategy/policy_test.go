package strategy

import (
	"math"
	"path/filepath"
	"testing"
)

func TestDecide(t *testing.T) {
	s := mustLoad(t, filepath.Join("testdata", "email-handler.toml")) // user_confirmation = 0.6
	noThreshold := s.Clone()
	delete(noThreshold.Parameters, "user_confirmation")
	tests := []struct {
		name       string
		s          *Strategy
		action     string
		confidence float64
		want       Outcome
		reason     string
	}{
		{"never", s, "forward_to_external_addresses", 1, Blocked, `"forward_to_external_addresses" is in constraints.never_execute`},
		{"never, respelt", s, " Forward-To-External addresses", 1, Blocked, `" Forward-To-External addresses" is in constraints.never_execute`},
		{"must, confident", s, "sending_emails_to_clients", 1, Confirm, `"sending_emails_to_clients" is in constraints.must_confirm_before`},
		{"must, unsure", s, "deleting_important_messages", 0, Confirm, `"deleting_important_messages" is in constraints.must_confirm_before`},
		{"prefer, below", s, "bulk_operations", 0.59, Confirm, `"bulk_operations" is in constraints.prefer_confirm_for and confidence 0.59 < user_confirmation 0.6`},
		{"prefer, at", s, "bulk_operations", 0.6, Execute, `"bulk_operations" is in constraints.prefer_confirm_for but confidence 0.6 ≥ user_confirmation 0.6`},
		{"prefer, above", s, "financial_actions", 0.9, Execute, `"financial_actions" is in constraints.prefer_confirm_for but confidence 0.9 ≥ user_confirmation 0.6`},
		{"prefer, NaN", s, "financial_actions", math.NaN(), Confirm, `"financial_actions" is in constraints.prefer_confirm_for and the confidence is not a number`},
		{"prefer, no threshold", noThreshold, "financial_actions", 1, Confirm, `"financial_actions" is in constraints.prefer_confirm_for and parameters.user_confirmation is not set`},
		{"free, unsure", s, "archive_newsletter", 0, Execute, `"archive_newsletter" is not constrained`},
		{"free, confident", s, "archive_newsletter", 1, Execute, `"archive_newsletter" is not constrained`},
		{"empty", s, "  ", 1, Blocked, `no action named`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.s.Decide(tc.action, tc.confidence)
			if got.Outcome != tc.want || got.Reason != tc.reason {
				t.Errorf("Decide(%q, %v) = %s (%s), want %s (%s)", tc.action, tc.confidence, got.Outcome, got.Reason, tc.want, tc.reason)
			}
		})
	}
}
