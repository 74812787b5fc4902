package replay_test

import (
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/replay"
)

func TestCompileSuccess(t *testing.T) {
	if s, err := replay.CompileSuccess(""); s != nil || err != nil {
		t.Fatalf(`CompileSuccess(""): %v, %v; want nil, nil`, s, err)
	}
	if _, err := replay.CompileSuccess("output.action =="); err == nil || !strings.HasPrefix(err.Error(), "score.success: ") {
		t.Fatalf("a bad expression: %v", err)
	}
	s, err := replay.CompileSuccess(`output.action == truth.action && input.n > 1 && vars.action == "archive"`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{"action": "archive"}
	for _, tc := range []struct {
		name  string
		env   map[string]any
		holds bool
	}{
		{"holds", replay.ScoreEnv(out, map[string]any{"action": "archive"}, map[string]any{"n": 2}), true},
		{"other truth", replay.ScoreEnv(out, map[string]any{"action": "reply"}, map[string]any{"n": 2}), false},
		{"no truth", replay.ScoreEnv(out, nil, map[string]any{"n": 2}), false},
		{"error", replay.ScoreEnv(out, map[string]any{"action": "archive"}, map[string]any{"n": "two"}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.Of(tc.env); got != tc.holds {
				t.Fatalf("Of: %v, want %v", got, tc.holds)
			}
		})
	}
}
