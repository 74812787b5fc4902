package replay_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// twoStrategies are a baseline with a file and a candidate, as a replay
// with --strategy has them.
func twoStrategies(t *testing.T) ([]string, []*strategy.Strategy) {
	t.Helper()
	dir := t.TempDir()
	text := "[metadata]\nname = \"s\"\nversion = \"1.0.0\"\ncreated_at = 2026-01-01T00:00:00Z\n\n[parameters]\nx = 0.5\n\n[evolution]\nmax_parameter_delta = 0.1\nbranch_type = \"experimental\"\n"
	var files []string
	var sts []*strategy.Strategy
	for i, v := range []string{"1.0.0", "1.1.0"} {
		f := filepath.Join(dir, fmt.Sprintf("s%d.toml", i))
		if err := os.WriteFile(f, []byte(strings.Replace(text, "1.0.0", v, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := strategy.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		files, sts = append(files, f), append(sts, st)
	}
	return files, sts
}

// shardFile writes the results of tasks (each under both strategies) as
// shard of a replay, and returns its path.
func shardFile(t *testing.T, dir, shard string, files []string, sts []*strategy.Strategy, seed int64, tasks ...string) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("shard-%s-%d-%s.jsonl", strings.ReplaceAll(shard, "/", "-"), seed, strings.Join(tasks, "")))
	rf, err := replay.CreateResults(path, "pipeline.toml", files, sts, replay.ResultsHeader{Shard: shard, Seed: seed, OnMiss: replay.MissFail})
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Abort()
	for _, task := range tasks {
		for _, st := range sts {
			if err := rf.Add(replay.Result{Task: task, Strategy: st.Metadata.Version, Hash: st.Hash()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rf.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestResultsRoundTrip(t *testing.T) {
	files, sts := twoStrategies(t)
	dir := t.TempDir()
	path := shardFile(t, dir, "", files, sts, 7, "a", "b")
	rc, err := replay.ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	h, rs := rc.Header, rc.Results
	abs, _ := filepath.Abs("pipeline.toml")
	if h.Type != "header" || h.Pipeline != abs || h.Seed != 7 || len(h.Strategies) != 2 {
		t.Fatalf("header %+v", h)
	}
	if want, _ := os.ReadFile(files[1]); h.Strategies[1] != string(want) {
		t.Fatalf("candidate text %q, want the file's", h.Strategies[1])
	}
	if len(rs) != 4 || rs[0].Task != "a" || rs[1].Hash != sts[1].Hash() {
		t.Fatalf("results %+v", rs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the directory holds %d entries, want the results file alone", len(entries))
	}
}

// TestResultsAbortLeavesNothing: a replay that fails half-way leaves no
// file at --results, not even a partial one.
func TestResultsAbortLeavesNothing(t *testing.T) {
	files, sts := twoStrategies(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	rf, err := replay.CreateResults(path, "p.toml", files, sts, replay.ResultsHeader{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rf.Add(replay.Result{Task: "a", Hash: sts[0].Hash()}); err != nil {
		t.Fatal(err)
	}
	rf.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("after Abort the directory holds %v", entries)
	}
	if _, err := replay.CreateResults(path, "p.toml", []string{filepath.Join(dir, "gone.toml")}, sts, replay.ResultsHeader{}); err == nil {
		t.Fatal("a missing strategy file made a results file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a failed create left %v", entries)
	}
}

func TestReadResultsErrors(t *testing.T) {
	header := `{"type":"header","pipeline":"/p.toml","strategies":["x"]}`
	result := `{"type":"result","result":{"task":"a"}}`
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "F: not a results file (no header line)"},
		{"no strategy", `{"type":"header","pipeline":"/p.toml"}`, "F:1: header names no strategy"},
		{"result first", result + "\n" + header, "F:1: a result before the header line"},
		{"two headers", header + "\n" + header, "F:2: a second header line"},
		{"unknown type", header + "\n" + `{"type":"footer"}`, `F:2: unknown line type "footer"`},
		{"not json", header + "\n{", "F:2: unexpected end of JSON input"},
		{"end first", `{"type":"end"}`, "F:1: the end line before the header line"},
		{"after the end", header + "\n" + `{"type":"end","sha256":"` + sum(header+"\n") + `"}` + "\n" + result, "F:3: a line after the end line"},
		{"changed", header + "\n" + result + "\n" + `{"type":"end","results":1,"sha256":"` + sum(header+"\n") + `"}`,
			"F:3: the lines above have sha256 " + sum(header + "\n" + result + "\n")[:12] + "…, the end line says " + sum(header + "\n")[:12] + "…: the file was changed after its replay wrote it"},
		{"miscounted", header + "\n" + result + "\n" + `{"type":"end","results":2,"sha256":"` + sum(header+"\n"+result+"\n") + `"}`,
			"F:3: the end line counts 2 results, the file holds 1"},
		{"candidate line in a replay's", header + "\n" + `{"type":"candidate","result":{"task":"a"}}`,
			"F:2: a candidate pipeline's result, but the header names no candidate pipeline"},
		{"candidate with one strategy", `{"type":"header","pipeline":"/p.toml","strategies":["x"],"candidate":{"file":"c.toml"}}`,
			"F:1: header names a candidate pipeline and 1 strategies, want 2 (the pipeline's and the candidate's)"},
		{"candidate cut short", `{"type":"header","pipeline":"/p.toml","strategies":["x","x"],"candidate":{"file":"c.toml"}}` + "\n" + result,
			"F: no end line: the file is cut short (a shard that did not finish, or a partial copy)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "r.jsonl")
			if err := os.WriteFile(f, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := replay.ReadResults(f)
			if want := strings.ReplaceAll(tc.want, "F", f); err == nil || err.Error() != want {
				t.Fatalf("err %v, want %s", err, want)
			}
		})
	}
}

// sum is the SHA-256 of text, hex.
func sum(text string) string {
	b := sha256.Sum256([]byte(text))
	return hex.EncodeToString(b[:])
}

// mergedAs merges files and checks the results' order, as TASK@VERSION
// words.
func mergedAs(t *testing.T, want string, files ...string) *replay.Merged {
	t.Helper()
	m, err := replay.MergeFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.Results {
		got = append(got, r.Task+"@"+r.Strategy)
	}
	if strings.Join(got, " ") != want {
		t.Fatalf("merged %s, want %s", strings.Join(got, " "), want)
	}
	return m
}

func TestMergeFiles(t *testing.T) {
	files, sts := twoStrategies(t)
	dir := t.TempDir()
	s1 := shardFile(t, dir, "1/2", files, sts, 1, "c", "a")
	s2 := shardFile(t, dir, "2/2", files, sts, 1, "b")
	m := mergedAs(t, "a@1.0.0 a@1.1.0 b@1.0.0 b@1.1.0 c@1.0.0 c@1.1.0", s2, s1)
	if len(m.Strategies) != 2 || m.Strategies[1].Hash() != sts[1].Hash() {
		t.Fatalf("strategies %v", m.Strategies)
	}
	whole := shardFile(t, dir, "", files, sts, 1, "a")
	if m, err := replay.MergeFiles([]string{whole}); err != nil || len(m.Results) != 2 {
		t.Fatalf("one unsharded file: %v, %v", m, err)
	}
	whole2 := shardFile(t, dir, "", files, sts, 1, "b")
	other := shardFile(t, dir, "2/2", files, sts, 2, "b")
	overlap := shardFile(t, dir, "2/2", files, sts, 3, "a")
	overlap1 := shardFile(t, dir, "1/2", files, sts, 3, "a")
	three := shardFile(t, dir, "1/3", files, sts, 1, "a")
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"missing shard", []string{s1}, "shard 2/2 is missing: merge needs every shard to judge the whole"},
		{"shard twice", []string{s1, s1, s2}, s1 + ": shard 1/2 again (also " + s1 + ")"},
		{"other settings", []string{s1, other}, other + ": replayed another pipeline, other strategies or other settings than " + s1},
		{"overlap", []string{overlap1, overlap}, overlap + ": task a replayed twice under 1.0.0 (overlapping shards?)"},
		{"other total", []string{s1, three}, three + `: shard "1/3" does not match ` + s1 + " (shard 1/2)"},
		{"not a shard", []string{whole, whole2}, whole2 + ": not a shard: merge combines the shards of one sharded replay"},
		{"no file", []string{filepath.Join(dir, "gone")}, "open " + filepath.Join(dir, "gone") + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := replay.MergeFiles(tc.files)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestMergeShards(t *testing.T) {
	_, sts := twoStrategies(t)
	r := func(task string, st *strategy.Strategy) replay.Result {
		return replay.Result{Task: task, Strategy: st.Metadata.Version, Hash: st.Hash()}
	}
	got, err := replay.MergeShards([][]replay.Result{{r("b", sts[1]), r("b", sts[0])}, {r("a", sts[0]), r("a", sts[1])}}, sts)
	if err != nil || len(got) != 4 || got[0].Task != "a" || got[0].Hash != sts[0].Hash() || got[3].Task != "b" || got[3].Hash != sts[1].Hash() {
		t.Fatalf("merged %+v, %v", got, err)
	}
	if _, err := replay.MergeShards([][]replay.Result{{r("a", sts[0])}, {r("a", sts[0])}}, sts); err == nil ||
		err.Error() != "shard 2/2: task a replayed twice under 1.0.0 (also in shard 1/2)" {
		t.Fatalf("a task twice: %v", err)
	}
	if _, err := replay.MergeShards([][]replay.Result{{{Task: "a", Hash: "feed"}}}, sts); err == nil ||
		err.Error() != "shard 1/1: task a replayed under strategy feed, which this replay does not replay" {
		t.Fatalf("an unknown strategy: %v", err)
	}
}

func TestResolveShard(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		total      int
		env        map[string]string
		i, n       int
		err        string
	}{
		{name: "none"},
		{name: "explicit", flag: "2/4", i: 1, n: 4},
		{name: "bad", flag: "5/4", err: `--shard "5/4": want I/N with 1 ≤ I ≤ N, or auto`},
		{name: "total without auto", flag: "1/2", total: 2, err: "--shard-total goes with --shard auto"},
		{name: "k8s", flag: "auto", total: 3, env: map[string]string{replay.EnvK8sIndex: "2"}, i: 2, n: 3},
		{name: "k8s env total", flag: "auto", env: map[string]string{replay.EnvK8sIndex: "0", replay.EnvShardTotal: "2"}, n: 2},
		{name: "k8s no total", flag: "auto", env: map[string]string{replay.EnvK8sIndex: "0"},
			err: "--shard auto: JOB_COMPLETION_INDEX=0 but no total: pass --shard-total N (the Job's completions) or set SEXTANT_SHARD_TOTAL"},
		{name: "k8s past total", flag: "auto", total: 2, env: map[string]string{replay.EnvK8sIndex: "2"},
			err: "--shard auto: JOB_COMPLETION_INDEX=2 is not below the total 2"},
		{name: "k8s bad index", flag: "auto", total: 2, env: map[string]string{replay.EnvK8sIndex: "-1"},
			err: `--shard auto: JOB_COMPLETION_INDEX="-1" is not an index (0, 1, …)`},
		{name: "gitlab", flag: "auto", env: map[string]string{replay.EnvGitLabIndex: "3", replay.EnvGitLabTotal: "3"}, i: 2, n: 3},
		{name: "gitlab disagrees", flag: "auto", total: 2, env: map[string]string{replay.EnvGitLabIndex: "1", replay.EnvGitLabTotal: "3"},
			err: "--shard auto: --shard-total 2 disagrees with CI_NODE_TOTAL=3"},
		{name: "nothing", flag: "auto", err: "--shard auto: no shard index in the environment: set JOB_COMPLETION_INDEX (Kubernetes Indexed Job) with --shard-total or SEXTANT_SHARD_TOTAL, or CI_NODE_INDEX and CI_NODE_TOTAL (GitLab parallel jobs), or pass --shard I/N"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, n, err := replay.ResolveShard(tc.flag, tc.total, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil || i != tc.i || n != tc.n {
				t.Fatalf("got %d/%d, %v; want %d/%d", i, n, err, tc.i, tc.n)
			}
		})
	}
	if _, _, err := replay.ParseShard("x"); !strings.Contains(fmt.Sprint(err), "want I/N") || errors.Unwrap(err) != nil {
		t.Fatalf("ParseShard(x): %v", err)
	}
}

// TestMergeSameStrategies: a candidate identical to the baseline (a copy
// of the strategy file, as a new project's CI starts with) gives each task
// two results of one strategy hash in each shard; they merge as the
// unsharded replay's do, while a task in two shards is still an overlap.
func TestMergeSameStrategies(t *testing.T) {
	files, sts := twoStrategies(t)
	files, sts = []string{files[0], files[0]}, []*strategy.Strategy{sts[0], sts[0]}
	dir := t.TempDir()
	s1 := shardFile(t, dir, "1/2", files, sts, 1, "a")
	s2 := shardFile(t, dir, "2/2", files, sts, 1, "b")
	mergedAs(t, "a@1.0.0 a@1.0.0 b@1.0.0 b@1.0.0", s2, s1)
	overlap := shardFile(t, dir, "2/2", files, sts, 1, "a")
	if _, err := replay.MergeFiles([]string{s1, overlap}); err == nil || err.Error() != overlap+": task a replayed twice under 1.0.0 (overlapping shards?)" {
		t.Fatalf("overlap: %v", err)
	}
	thrice := shardFile(t, dir, "2/2", files, sts, 1, "b", "b")
	if _, err := replay.MergeFiles([]string{s1, thrice}); err == nil || err.Error() != thrice+": task b replayed 4 times under 1.0.0, which the replay's strategies name 2 times" {
		t.Fatalf("a task replayed too often in one file: %v", err)
	}
	r := func(task string) replay.Result {
		return replay.Result{Task: task, Strategy: "1.0.0", Hash: sts[0].Hash()}
	}
	if got, err := replay.MergeShards([][]replay.Result{{r("b"), r("b")}, {r("a"), r("a")}}, sts); err != nil || len(got) != 4 || got[0].Task != "a" {
		t.Fatalf("MergeShards of one strategy twice: %+v, %v", got, err)
	}
	if _, err := replay.MergeShards([][]replay.Result{{r("a"), r("a")}, {r("a")}}, sts); err == nil ||
		err.Error() != "shard 2/2: task a replayed twice under 1.0.0 (also in shard 1/2)" {
		t.Fatalf("MergeShards overlap: %v", err)
	}
}
