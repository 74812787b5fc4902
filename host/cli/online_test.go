package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// copyExample copies the answer-and-learn example into a fresh directory,
// with edit applied to its pipeline.toml.
func copyExample(t *testing.T, edit func(pipeline string) string) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), "pipelines", "answer-and-learn")
	dir := t.TempDir()
	for _, f := range []string{"pipeline.toml", "ace.chain.toml", "responses.toml", "strategies/support-agent.toml",
		"inputs/refund.json", "inputs/shipping.json", "inputs/returns.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "pipeline.toml" {
			b = []byte(edit(string(b)))
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func onlineOn(p string) string {
	return strings.Replace(p, "[evolve]\n", "[evolve]\nonline = true\n", 1)
}

// runJSON runs `sextant run` in-process and returns its exit code, the
// decoded result and stderr.
func runJSON(t *testing.T, args ...string) (int, map[string]any, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), append([]string{"run", "--json"}, args...), nil, &stdout, &stderr)
	var res map[string]any
	if code == 0 {
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("run %v: %v\n%s", args, err, stdout.String())
		}
	}
	return code, res, stderr.String()
}

func succeeded(res map[string]any) bool {
	out, _ := res["output"].(map[string]any)
	refl, _ := out["reflection"].(map[string]any)
	return refl["correct"] == true
}

// TestOnlineLearning runs the online adapter over a stream of tasks with
// feedback (ground truth scored by the reflector): every scored task makes
// a new version with lineage, the next task runs under it, and the
// playbook's success rate rises version by version; a production strategy
// configured to learn online is refused and stays unchanged.
func TestOnlineLearning(t *testing.T) {
	isolate(t)
	t.Setenv("NO_COLOR", "1")
	dir := copyExample(t, onlineOn)
	pipe := filepath.Join(dir, "pipeline.toml")
	topics := []string{"refund", "shipping", "returns"}
	learnedRE := regexp.MustCompile(`(?m)^learned support-agent (\S+) from task (\S+) \((succeeded|failed); ([^)]*)\)`)
	var versions []string // the version each task ran under
	roundOK := make([]int, 3)
	for round := range 3 {
		for _, topic := range topics {
			id := fmt.Sprintf("%s-%d", topic, round+1)
			code, res, stderr := runJSON(t, pipe, "--id", id, "--input", filepath.Join(dir, "inputs", topic+".json"))
			if code != 0 {
				t.Fatalf("run %s: exit %d\n%s", id, code, stderr)
			}
			if succeeded(res) {
				roundOK[round]++
			}
			m := learnedRE.FindStringSubmatch(stderr)
			if m == nil || m[2] != id {
				t.Fatalf("run %s learned nothing:\n%s", id, stderr)
			}
			versions = append(versions, m[1])
			t.Logf("%s: %s → %s (%s)", id, m[3], m[1], m[4])
		}
	}
	// Round 1 learns shipping and returns from its two failures; rounds 2
	// and 3 answer everything.
	if roundOK[0] != 1 || roundOK[1] != 3 || roundOK[2] != 3 {
		t.Fatalf("successes per round of 3 = %v, want [1 3 3]", roundOK)
	}

	// Every version is recorded with its lineage: 1.0.0 → 1.1.0 → … → 1.9.0.
	st, err := store.Open(context.Background(), filepath.Join(dir, ".sextant"), store.Config{}.WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	log, err := st.StrategyLog(context.Background(), "support-agent")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 9 {
		t.Fatalf("%d versions recorded, want 9 (one per scored task)", len(log))
	}
	parent := "1.0.0"
	for i, r := range log {
		if r.Version != versions[i] || r.Parent != parent || r.Author != "sextant online" {
			t.Fatalf("version %d: %s (parent %s, by %s), want %s (parent %s, by sextant online)", i, r.Version, r.Parent, r.Author, versions[i], parent)
		}
		s, err := strategy.Load(filepath.Join(dir, "strategies", "support-agent-"+r.Version+".toml"))
		if err != nil || s.Hash() != r.Hash {
			t.Fatalf("version %s: file does not match its record (%v)", r.Version, err)
		}
		parent = r.Version
	}

	// Each version's playbook, evaluated on the three questions: the
	// success rate never falls and ends at 1.
	eval := func(version string) float64 {
		file := "strategies/support-agent.toml"
		if version != "1.0.0" {
			file = "strategies/support-agent-" + version + ".toml"
		}
		p, err := os.ReadFile(pipe)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(strings.Replace(string(p), "online = true\n", "", 1), `file = "strategies/support-agent.toml"`, `file = "`+file+`"`, 1)
		evalPipe := filepath.Join(dir, "eval.toml")
		if err := os.WriteFile(evalPipe, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ok := 0
		for _, topic := range topics {
			code, res, stderr := runJSON(t, evalPipe, "--store", filepath.Join(dir, ".eval-store"), "--input", filepath.Join(dir, "inputs", topic+".json"))
			if code != 0 {
				t.Fatalf("eval %s on %s: exit %d\n%s", version, topic, code, stderr)
			}
			if succeeded(res) {
				ok++
			}
		}
		return float64(ok) / float64(len(topics))
	}
	rates := []float64{eval("1.0.0")}
	for _, r := range log {
		rates = append(rates, eval(r.Version))
	}
	t.Logf("success rate per version (1.0.0 then each learned one): %v", rates)
	for i := 1; i < len(rates); i++ {
		if rates[i] < rates[i-1] {
			t.Fatalf("success rate fell from %.3f to %.3f at version %s", rates[i-1], rates[i], log[i-1].Version)
		}
	}
	if rates[0] >= 1 || rates[len(rates)-1] != 1 {
		t.Fatalf("success rate %.3f → %.3f, want it to rise to 1", rates[0], rates[len(rates)-1])
	}

	// The counters of the last version match the cited-bullet outcomes:
	// answers-00001 (refund, helpful 4 in 1.0.0) was cited by three
	// successful refund tasks; the learned bullets by the two later rounds.
	last, err := strategy.Load(filepath.Join(dir, "strategies", "support-agent-"+versions[len(versions)-1]+".toml"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][3]int{}
	for _, b := range last.Playbook {
		got[b.Content[:8]] = [3]int{b.Helpful, b.Harmful, b.Neutral}
	}
	want := map[string][3]int{"Refunds ": {7, 0, 0}, "Shipping": {2, 0, 0}, "Returns ": {2, 0, 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counters %v, want %v", got, want)
	}

	t.Run("production strategy stays unchanged", func(t *testing.T) {
		dir := copyExample(t, onlineOn)
		sf := filepath.Join(dir, "strategies", "support-agent.toml")
		orig, err := os.ReadFile(sf)
		if err != nil {
			t.Fatal(err)
		}
		prod := bytes.Replace(orig, []byte(`branch_type = "experimental"`), []byte(`branch_type = "production"`), 1)
		if err := os.WriteFile(sf, prod, 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), []string{"run", filepath.Join(dir, "pipeline.toml"), "--input", filepath.Join(dir, "inputs", "shipping.json")}, nil, &stdout, &stderr)
		if code != ExitInvalid {
			t.Fatalf("exit %d, want %d\n%s%s", code, ExitInvalid, stdout.String(), stderr.String())
		}
		if want := `pipeline.toml:\d+: evolve.online: strategy support-agent 1.0.0 is on the production branch: only experimental strategies learn online; production strategies change only through gates \(sextant evolve\)`; !regexp.MustCompile(want).MatchString(stderr.String()) {
			t.Fatalf("stderr %q does not match %q", stderr.String(), want)
		}
		after, err := os.ReadFile(sf)
		if err != nil || !bytes.Equal(after, prod) {
			t.Fatalf("the production strategy changed (%v)", err)
		}
		entries, _ := os.ReadDir(filepath.Join(dir, "strategies"))
		if len(entries) != 1 {
			t.Fatalf("strategies/ holds %d files, want only the production one", len(entries))
		}
		if _, err := os.Stat(filepath.Join(dir, ".sextant")); err == nil {
			t.Fatalf("a refused run wrote a store")
		}
	})
}
