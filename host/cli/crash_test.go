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
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/store"
)

// TestCrashResume kills `sextant run` with SIGKILL at many points spread over
// a run whose provider is slow, then runs `sextant resume`, and checks the
// durability contract of DESIGN.md §6: the run completes; a step completed
// before the kill is not executed again; a provider call answered (recorded)
// before the kill is served from its recording, so the provider never sees
// it again; no span or recording is lost or duplicated.
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
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	pdir := filepath.Join(dir, "plugins", "slow-provider")
	os.MkdirAll(pdir, 0o755)
	b, _ := os.ReadFile(provider)
	os.WriteFile(filepath.Join(pdir, "slow-provider"), b, 0o755)
	os.WriteFile(filepath.Join(pdir, "plugin.toml"), []byte(fmt.Sprintf(
		"name = \"slow-provider\"\nkind = \"provider\"\nversion = \"1.0.0\"\napi = 1\n[process]\ncommand = \"slow-provider\"\nsha256 = %q\n",
		plugintest.SHA256(t, provider))), 0o644)
	storeDir := filepath.Join(dir, "store")
	callLog := filepath.Join(dir, "calls.log")
	env := append(os.Environ(), "CALL_LOG="+callLog, "SEXTANT_STORE="+storeDir, "XDG_DATA_HOME="+dir)
	sextant := func(args ...string) *exec.Cmd {
		c := exec.Command(bin, args...)
		c.Dir, c.Env = dir, env
		return c
	}

	// One uninterrupted run measures how long a run takes, to spread the kills.
	start := time.Now()
	if out, err := sextant("run", "pipeline.toml", "--id", "warm", "--set", "topic=warm").CombinedOutput(); err != nil {
		t.Fatalf("warm-up run: %v\n%s", err, out)
	}
	span := time.Since(start)
	const points = 32
	interrupted := 0
	for i := 0; i < points; i++ {
		id := fmt.Sprintf("crash-%02d", i)
		// Spread over the run after start-up (pipeline load, plugin start).
		delay := span/5 + span*4/5*time.Duration(i)/time.Duration(points)
		cmd := sextant("run", "pipeline.toml", "--id", id, "--set", "topic="+id)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Kill()
		cmd.Wait()

		before := snapshot(t, storeDir, id)
		callsBefore := calls(t, callLog, id)
		if before == nil {
			// Killed before the task existed: nothing to resume, run it anew.
			if out, err := sextant("run", "pipeline.toml", "--id", id, "--set", "topic="+id).CombinedOutput(); err != nil {
				t.Fatalf("%s: rerun: %v\n%s", id, err, out)
			}
		} else if before.status != store.StatusCompleted {
			interrupted++
			if out, err := sextant("resume", id).CombinedOutput(); err != nil {
				t.Fatalf("%s (killed after %v, %d steps checkpointed): resume: %v\n%s", id, delay, before.steps, err, out)
			}
		}
		after := snapshot(t, storeDir, id)
		if after == nil || after.status != store.StatusCompleted {
			t.Fatalf("%s: not completed after resume: %+v", id, after)
		}
		// Every node ran exactly once, as far as the record shows.
		for n := 1; n <= 10; n++ {
			if c := after.stepSpans[fmt.Sprintf("s%d", n)]; c != 1 {
				t.Errorf("%s: %d spans for step s%d, want 1 (killed after %v)", id, c, n, delay)
			}
		}
		if after.chatSpans != 5 || after.recordings != 5 || !after.contiguous {
			t.Errorf("%s: %d chat spans, %d recordings, contiguous seq %v; want 5, 5, true", id, after.chatSpans, after.recordings, after.contiguous)
		}
		// Steps checkpointed before the kill keep their spans (same ids).
		if before != nil {
			for id2, sp := range before.spanIDs {
				if after.spanIDs[id2] != sp {
					t.Errorf("%s: span %s changed across resume", id, id2)
				}
			}
		}
		// A call recorded before the kill is never sent again.
		callsAfter := calls(t, callLog, id)
		if before != nil {
			for step := range before.recordedSteps {
				if callsAfter[step] != callsBefore[step] {
					t.Errorf("%s: step %s was recorded before the kill but the provider saw it again (%d → %d calls)",
						id, step, callsBefore[step], callsAfter[step])
				}
			}
		}
		for step, n := range callsAfter {
			if n > 2 {
				t.Errorf("%s: provider saw step %s %d times", id, step, n)
			}
		}
	}
	if interrupted < 20 {
		t.Fatalf("only %d of %d kills interrupted a run; want at least 20", interrupted, points)
	}
	t.Logf("%d runs killed mid-run and resumed (run takes ~%v)", interrupted, span)
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
