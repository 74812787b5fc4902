package app

import (
	"errors"
	"strings"
	"testing"
)

// TestReplayFlagsCheck: replay's and gate's flags are refused before any
// work, each as a usage error naming the flag, and --shard resolves.
func TestReplayFlagsCheck(t *testing.T) {
	env := func(string) string { return "" }
	for _, tc := range []struct {
		name string
		f    ReplayFlags
		cand bool   // gate --candidate-pipeline
		want string // "" is no error
	}{
		{"plain", ReplayFlags{}, false, ""},
		{"shard", ReplayFlags{Shard: "2/4", Results: "r.jsonl"}, false, ""},
		{"shard without results", ReplayFlags{Shard: "1/2"}, false, "--shard needs --results"},
		{"shard with report", ReplayFlags{Shard: "1/2", Results: "r", Reports: []string{"json=-"}}, false, "--report with --shard"},
		{"bad shard", ReplayFlags{Shard: "5/2", Results: "r"}, false, "5/2"},
		{"bad report", ReplayFlags{Reports: []string{"pdf=x"}}, false, "pdf"},
		{"temporal with shard", ReplayFlags{Temporal: "h:1", TemporalShards: 1, Results: "r"}, false, "--temporal shards the replay itself"},
		{"temporal with otlp", ReplayFlags{Temporal: "h:1", TemporalShards: 1, OTLP: true}, false, "--otlp-endpoint with --temporal"},
		{"temporal shards", ReplayFlags{Temporal: "h:1"}, false, "--temporal-shards 0"},
		{"candidate", ReplayFlags{Reports: []string{"json=-"}}, true, ""},
		{"candidate shard", ReplayFlags{Shard: "2/4", Results: "r.jsonl"}, true, ""},
		{"candidate shard without results", ReplayFlags{Shard: "1/2"}, true, "--shard needs --results"},
		{"candidate shard with report", ReplayFlags{Shard: "1/2", Results: "r", Reports: []string{"json=-"}}, true, "--report with --shard"},
		{"candidate temporal", ReplayFlags{Temporal: "h:1", TemporalShards: 1}, true,
			"--temporal cannot be used with --candidate-pipeline: Temporal workers replay the strategies of the pipeline they check out, not a candidate pipeline; instead, split the gate across CI jobs"},
		{"candidate bad report", ReplayFlags{Reports: []string{"pdf=x"}}, true, "pdf"},
	} {
		check := tc.f.Check
		if tc.cand {
			check = tc.f.CheckCandidate
		}
		shard, shards, err := check(env)
		if tc.f.Shard == "2/4" && (shard != 1 || shards != 4) {
			t.Errorf("%s: shard %d of %d, want 1 of 4", tc.name, shard, shards)
		}
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.As(err, new(*UsageError)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error with %q", tc.name, err, tc.want)
		}
	}
}
