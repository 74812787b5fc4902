package replay_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/replay"
)

// candShard writes the results of gate --candidate-pipeline's shard (""
// unsharded) over tasks: each task's baseline result, then its candidate
// result with one live call costing $0.01, and returns its path.
func candShard(t *testing.T, dir, shard string, ref replay.CandidateRef, tasks ...string) string {
	t.Helper()
	files, sts := twoStrategies(t)
	files[1], sts[1] = files[0], sts[0] // a model swap: one strategy
	_, n, err := replay.ParseShard(shard)
	if err != nil {
		t.Fatal(err)
	}
	ref.ShardMaxUSD = replay.ShardMax(ref.MaxLiveCostUSD, n)
	path := filepath.Join(dir, fmt.Sprintf("cand-%s-%s-%s.jsonl", strings.ReplaceAll(shard, "/", "-"), ref.Digest, strings.Join(tasks, "")))
	rf, err := replay.CreateResults(path, "pipeline.toml", files, sts, replay.ResultsHeader{Shard: shard, Seed: 1, OnMiss: replay.MissFail, Candidate: &ref})
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Abort()
	for _, task := range tasks {
		r := replay.Result{Task: task, Strategy: sts[0].Metadata.Version, Hash: sts[0].Hash()}
		if err := rf.Add(r); err != nil {
			t.Fatal(err)
		}
		r.Live = []replay.LiveCall{{Step: "classify", Kind: "chat", Provider: "big", Name: "gpt-4o", CostUSD: 0.01}}
		if err := rf.AddCandidate(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := rf.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

// bigRef is a model-swap overlay's identity, its live calls capped at $1.
func bigRef() replay.CandidateRef {
	return replay.CandidateRef{File: "big.toml", Digest: "d1", Base: "/p/pipeline.toml", OnMiss: replay.MissLive, MaxLiveCostUSD: 1, Recorded: true}
}

// TestCandidateResults: a results file of gate --candidate-pipeline keeps
// the candidate's identity (digest, overlay base, on_miss, its cap and the
// shard's share), its results apart from the baseline's, and counts its
// live calls and their cost in the end line, which a changed file fails.
func TestCandidateResults(t *testing.T) {
	dir := t.TempDir()
	path := candShard(t, dir, "1/2", bigRef(), "a", "b")
	rc, err := replay.ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	want := bigRef()
	want.ShardMaxUSD = 0.5
	if c := rc.Header.Candidate; c == nil || *c != want {
		t.Fatalf("candidate %+v, want %+v", c, want)
	}
	if len(rc.Results) != 2 || len(rc.Candidate) != 2 || rc.Candidate[1].Task != "b" || len(rc.Candidate[1].Live) != 1 || rc.Results[0].Live != nil {
		t.Fatalf("results %+v, candidate %+v", rc.Results, rc.Candidate)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	for _, want := range []string{`"digest":"d1"`, `"base":"/p/pipeline.toml"`, `"on_miss":"live"`, `"max_live_cost_usd":1`, `"shard_max_live_cost_usd":0.5`, `"recorded":true`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("header %s: no %s", lines[0], want)
		}
	}
	if end := lines[len(lines)-1]; !strings.HasPrefix(end, `{"type":"end","results":4,"live_calls":2,"live_cost_usd":0.02,"sha256":"`) {
		t.Errorf("end line %s", end)
	}

	for _, tc := range []struct{ name, from, to, want string }{
		{"a cost lowered", `"cost_usd":0.01}]`, `"cost_usd":0.001}]`, ":6: the lines above have sha256 "},
		{"the end line's cost lowered", `"live_cost_usd":0.02`, `"live_cost_usd":0.002`, ":6: the end line counts 2 live calls costing $0.0020, the results 2 costing $0.0200"},
		{"the digest changed", `"digest":"d1"`, `"digest":"d2"`, ":6: the lines above have sha256 "},
		{"the end line dropped", lines[len(lines)-1] + "\n", "", ": no end line: the file is cut short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "tampered.jsonl")
			changed := bytes.Replace(text, []byte(tc.from), []byte(tc.to), 1)
			if bytes.Equal(changed, text) {
				t.Fatalf("%q is not in the file", tc.from)
			}
			if err := os.WriteFile(f, changed, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := replay.ReadResults(f)
			if err == nil || !strings.HasPrefix(err.Error(), f+tc.want) {
				t.Fatalf("err %v, want %s%s…", err, f, tc.want)
			}
		})
	}
}

// TestMergeCandidateFiles: shards of one candidate pipeline merge, its
// results apart from the baseline's, in task order; shards of different
// candidates, or a candidate's with a replay's, are refused at the file
// that differs.
func TestMergeCandidateFiles(t *testing.T) {
	dir := t.TempDir()
	s1 := candShard(t, dir, "1/2", bigRef(), "c", "a")
	unrecorded := bigRef()
	unrecorded.Recorded = false
	s2 := candShard(t, dir, "2/2", unrecorded, "b")
	m, err := replay.MergeFiles([]string{s2, s1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.Candidate {
		got = append(got, r.Task)
	}
	if strings.Join(got, " ") != "a b c" || len(m.Results) != 3 || m.Header.Candidate.Recorded {
		t.Fatalf("candidate %v, %d results, recorded %v: want a b c, 3, not recorded (shard 2/2's were not)", got, len(m.Results), m.Header.Candidate.Recorded)
	}

	other := bigRef()
	other.File, other.Digest = "small.toml", "d9"
	o2 := candShard(t, dir, "2/2", other, "b")
	files, sts := twoStrategies(t)
	plain2 := shardFile(t, dir, "2/2", files, sts, 1, "b")
	twice := candShard(t, dir, "2/2", bigRef(), "a")
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"another candidate", []string{s1, o2}, o2 + ":1: gated candidate pipeline small.toml (digest d9, overlay of /p/pipeline.toml, on_miss live, max_live_cost_usd $1.0000), but " +
			s1 + " gated big.toml (digest d1, overlay of /p/pipeline.toml, on_miss live, max_live_cost_usd $1.0000): shards of different candidates do not merge"},
		{"a replay's after", []string{s1, plain2}, plain2 + ":1: a replay's results, but " + s1 + " gated candidate pipeline big.toml (digest d1, overlay of /p/pipeline.toml, on_miss live, max_live_cost_usd $1.0000): merge the shards of one gate --candidate-pipeline, and no others"},
		{"a replay's before", []string{plain2, s1}, s1 + ":1: gated candidate pipeline big.toml (digest d1, overlay of /p/pipeline.toml, on_miss live, max_live_cost_usd $1.0000), but " + plain2 + " is a replay's results: merge the shards of one gate --candidate-pipeline, and no others"},
		{"a task twice", []string{s1, twice}, twice + ": task a replayed twice under 1.0.0 (overlapping shards?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := replay.MergeFiles(tc.files)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err %v\nwant %s", err, tc.want)
			}
		})
	}
}
