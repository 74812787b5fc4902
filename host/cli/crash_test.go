//go:build unix

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestCrashResume interrupts `sextant run` at many exact points of a run
// with a test-only failpoint (SEXTANT_FAILPOINT, see host/internal/failpoint)
// that SIGKILLs the process there, then runs `sextant resume`, and checks
// the durability contract (README, "Running pipelines"): the run completes; a step
// completed before the kill is not executed again; a provider call answered
// (recorded) before the kill is served from its recording, so the provider
// never sees it again; no span or recording is lost or duplicated.
//
// The points are exact, not timed: each run is killed where the table says
// or the test fails, so it holds on a loaded machine.
func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sextant and a plugin; kills processes")
	}
	dir := t.TempDir()
	bin := plugintest.Native(t, "cmd/sextant")
	provider := plugintest.Native(t, "testdata/plugins/slow-provider")
	for _, f := range []string{"pipeline.toml", "chain.toml", "strategy.toml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "crash", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pdir := filepath.Join(dir, "plugins", "slow-provider")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(provider)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "slow-provider"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "plugin.toml"), []byte(fmt.Sprintf(
		"name = \"slow-provider\"\nkind = \"provider\"\nversion = \"1.0.0\"\napi = 1\n[process]\ncommand = \"slow-provider\"\nsha256 = %q\n",
		plugintest.SHA256(t, provider))), 0o644); err != nil {
		t.Fatal(err)
	}
	storeDir := filepath.Join(dir, "store")
	callLog := filepath.Join(dir, "calls.log")
	env := append(scrubbedEnv(), "CALL_LOG="+callLog, "SEXTANT_STORE="+storeDir, "XDG_DATA_HOME="+dir,
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "SEXTANT_CACHE="+filepath.Join(dir, "cache", "sextant"))
	sextant := func(failpoint string, args ...string) *exec.Cmd {
		c := exec.Command(bin, args...)
		c.Dir, c.Env = dir, env
		if failpoint != "" {
			c.Env = append(append([]string(nil), env...), "SEXTANT_FAILPOINT="+failpoint)
		}
		return c
	}
	for _, p := range crashPoints() {
		t.Run(p, func(t *testing.T) {
			id := "crash-" + strings.NewReplacer(".", "-", ":", "-").Replace(p)
			cmd := sextant(p, "run", "pipeline.toml", "--id", id, "--set", "topic="+id)
			out, err := cmd.CombinedOutput()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("%s: the failpoint did not kill the run (%v); the table names a point the run never reaches\n%s", p, err, out)
			}

			before := snapshot(t, storeDir, id)
			callsBefore := calls(t, callLog, id)
			switch {
			case before == nil:
				// Killed before the task was written (inside its first write):
				// nothing is left, and the same run starts anew.
				if len(callsBefore) != 0 {
					t.Fatalf("%s: no task after the kill but the provider saw %v", p, callsBefore)
				}
				if out, err := sextant("", "run", "pipeline.toml", "--id", id, "--set", "topic="+id).CombinedOutput(); err != nil {
					t.Fatalf("%s: rerun: %v\n%s", p, err, out)
				}
				before = &taskState{}
			case before.status == store.StatusCompleted:
				t.Fatalf("%s: task completed before the kill; the point is past the end of the run", p)
			default:
				if out, err := sextant("", "resume", id).CombinedOutput(); err != nil {
					t.Fatalf("%s (%d steps checkpointed): resume: %v\n%s", p, before.steps, err, out)
				}
			}
			after := snapshot(t, storeDir, id)
			if after == nil || after.status != store.StatusCompleted {
				t.Fatalf("%s: not completed after resume: %+v", p, after)
			}
			// Every node ran exactly once, as far as the record shows.
			for n := 1; n <= 10; n++ {
				if c := after.stepSpans[fmt.Sprintf("s%d", n)]; c != 1 {
					t.Errorf("%s: %d spans for step s%d, want 1", p, c, n)
				}
			}
			if after.chatSpans != 5 || after.recordings != 5 || !after.contiguous {
				t.Errorf("%s: %d chat spans, %d recordings, contiguous seq %v; want 5, 5, true", p, after.chatSpans, after.recordings, after.contiguous)
			}
			// Steps checkpointed before the kill keep their spans (same ids).
			for id2, sp := range before.spanIDs {
				if after.spanIDs[id2] != sp {
					t.Errorf("%s: span %s changed across resume", p, id2)
				}
			}
			// A call recorded before the kill is never sent again.
			callsAfter := calls(t, callLog, id)
			for step := range before.recordedSteps {
				if callsAfter[step] != callsBefore[step] {
					t.Errorf("%s: step %s was recorded before the kill but the provider saw it again (%d → %d calls)",
						p, step, callsBefore[step], callsAfter[step])
				}
			}
			for step, n := range callsAfter {
				if n > 2 {
					t.Errorf("%s: provider saw step %s %d times", p, step, n)
				}
			}
			t.Logf("%s: killed with %d steps checkpointed, %d recordings; resumed", p, before.steps, before.recordings)
		})
	}
}

// crashPoints lists the interruption points: NAME:N arms the N-th pass
// through a failpoint (host/internal/failpoint) in one run of the 10-step
// chain (5 LLM steps, 5 expr steps). The run checkpoints once after start
// and once per step, and once more when it finishes (12 checkpoints): the
// last one also ends the execution and sets the task's status in the same
// commit, so CheckpointCommit:12 is the last point inside a run (and
// StatusExecution falls in no run that ends).
func crashPoints() []string {
	var ps []string
	add := func(name string, ns ...int) {
		for _, n := range ns {
			ps = append(ps, fmt.Sprintf("%s:%d", name, n))
		}
	}
	add(failpoint.StepStart, 1, 6, 10)
	add(failpoint.StepDone, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	add(failpoint.ChatAnswered, 1, 2, 3, 4, 5)
	add(failpoint.ChatRecorded, 1, 3, 5)
	add(failpoint.CheckpointCommit, 1, 2, 7, 12)
	add(failpoint.CheckpointCommitted, 1, 4, 11)
	add(failpoint.CheckpointSynced, 1, 9, 11)
	return ps
}

type taskState struct {
	status        store.Status
	steps         uint64
	stepSpans     map[string]int
	chatSpans     int
	recordings    int
	contiguous    bool
	spanIDs       map[string]string // step name → span id
	recordedSteps map[string]bool
}

// snapshot reads one task from the store (read-only; the writer is dead).
func snapshot(t *testing.T, dir, id string) *taskState {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	ctx := context.Background()
	s, err := store.Open(ctx, dir, store.NewConfig().WithReadOnly(true).WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer s.Close()
	tree, err := s.Tree(ctx, id)
	if err != nil {
		return nil
	}
	st := &taskState{status: tree.Task.Status, stepSpans: map[string]int{}, spanIDs: map[string]string{}, recordedSteps: map[string]bool{}, contiguous: true}
	for _, ex := range tree.Executions {
		if ex.Checkpoint != nil {
			st.steps = ex.Checkpoint.Step
		}
		for i, sp := range ex.Spans {
			if sp.Seq != uint64(i+1) {
				st.contiguous = false
			}
			switch {
			case strings.HasPrefix(sp.Name, "step "):
				name := strings.TrimPrefix(sp.Name, "step ")
				st.stepSpans[name]++
				st.spanIDs[name] = sp.SpanID
			case sp.Kind == store.SpanClient:
				st.chatSpans++
			}
		}
	}
	for _, h := range tree.Recordings {
		rec, err := s.Recording(ctx, h)
		if err != nil {
			t.Fatalf("recording %s: %v", h, err)
		}
		st.recordings++
		var req struct {
			Step string `json:"step"`
		}
		json.Unmarshal(rec.Request, &req)
		st.recordedSteps[req.Step] = true
	}
	return st
}

// scrubbedEnv is the test's environment without sextant's own variables,
// so a developer's SEXTANT_STORE or SEXTANT_CACHE never reaches the runs.
func scrubbedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEXTANT_") {
			env = append(env, kv)
		}
	}
	return env
}

// calls counts the provider's calls per step for one task (its topic is
// the task id, which every prompt carries).
func calls(t *testing.T, path, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		if len(parts) == 3 && parts[2] == id {
			out[parts[0]]++
		}
	}
	return out
}
