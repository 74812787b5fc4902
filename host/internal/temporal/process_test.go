package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/temporal"
	"github.com/sextant-dev/sextant/host/internal/temporal/temporaltest"
)

// upstream is an OpenAI-compatible server that counts the calls it
// answers, by prompt.
type upstream struct {
	mu    sync.Mutex
	calls map[string]int
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	prompt := req.Messages[len(req.Messages)-1].Content
	u.mu.Lock()
	u.calls[prompt]++
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		req.Model, "answer to "+prompt)
}

func (u *upstream) count() (total int, most int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, n := range u.calls {
		total += n
		most = max(most, n)
	}
	return total, most
}

const killPipeline = `name = "kill-chain"

[routine]
navigator = "chain"
file = "chain.toml"

[providers.default]
use = "openai"
model = "gpt-4o-mini"
base_url = "%s/v1"
api_key_env = "SEXTANT_TEST_OPENAI_KEY"

[steps.s1]
kind = "llm"
prompt = "first {{ .input.topic }}"

[steps.s2]
kind = "llm"
prompt = "second {{ .vars.a }}"

[steps.s3]
kind = "llm"
prompt = "third {{ .vars.b }}"
`

const killChain = `name = "kill-chain"
inputs = ["topic"]
outputs = ["a", "b", "c"]

[[steps]]
id = "s1"
outputs = ["a"]

[[steps]]
id = "s2"
outputs = ["b"]

[[steps]]
id = "s3"
outputs = ["c"]
`

const killOnePipeline = `name = "kill-one"

[routine]
navigator = "chain"
file = "chain.toml"

[providers.default]
use = "openai"
model = "gpt-4o-mini"
base_url = "%s/v1"
api_key_env = "SEXTANT_TEST_OPENAI_KEY"

[steps.s1]
kind = "llm"
prompt = "only {{ .input.topic }}"

[steps.s2]
kind = "expr"
set = { n = "len(vars.s1)" }

[steps.s3]
kind = "expr"
set = { done = "vars.s2.n > 0" }
`

const killOneChain = `name = "kill-one"
inputs = ["topic"]

[[steps]]
id = "s1"

[[steps]]
id = "s2"

[[steps]]
id = "s3"
`

// proc is a sextant subprocess.
type proc struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func (p *proc) wait() error { <-p.done; return p.err }

// TestWorkerProcesses runs pipelines on two real `sextant worker`
// processes writing through a real `sextant serve`:
//   - of two workers, the one that takes the LLM step is SIGKILLed by a
//     failpoint right after it recorded the answer (its step not yet
//     reported to Temporal); the other finishes the run from the
//     recording;
//   - a lone worker killed that way at its second of three LLM steps
//     leaves the run to two workers started after it died: the upstream
//     sees every prompt once, the store every step once;
//   - the three example pipelines, started with `sextant run --temporal`
//     (and resumed with `sextant resume --temporal`), give the same
//     results and spans as local runs.
func TestWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sextant; runs a Temporal dev server and subprocesses")
	}
	srv := temporaltest.Start(t)
	t.Setenv("SEXTANT_TEST_OPENAI_KEY", "sk-test")
	bin := plugintest.Native(t, "cmd/sextant")
	dir := t.TempDir()
	up := &upstream{calls: map[string]int{}}
	hs := httptest.NewServer(up)
	defer hs.Close()

	pipes := filepath.Join(dir, "pipelines")
	kill := filepath.Join(pipes, "kill-chain")
	must(t, os.MkdirAll(kill, 0o755))
	must(t, os.WriteFile(filepath.Join(kill, "pipeline.toml"), []byte(fmt.Sprintf(killPipeline, hs.URL)), 0o644))
	must(t, os.WriteFile(filepath.Join(kill, "chain.toml"), []byte(killChain), 0o644))
	one := filepath.Join(pipes, "kill-one")
	must(t, os.MkdirAll(one, 0o755))
	must(t, os.WriteFile(filepath.Join(one, "pipeline.toml"), []byte(fmt.Sprintf(killOnePipeline, hs.URL)), 0o644))
	must(t, os.WriteFile(filepath.Join(one, "chain.toml"), []byte(killOneChain), 0o644))
	examples := []string{"email-triage", "research-report", "answer-and-learn"}
	for _, e := range examples {
		abs, err := filepath.Abs(filepath.Join("..", "..", "..", "pipelines", e))
		must(t, err)
		must(t, os.Symlink(abs, filepath.Join(pipes, e)))
	}
	eventsDir, err := filepath.Abs(filepath.Join("testdata", "events"))
	must(t, err)
	must(t, os.Symlink(eventsDir, filepath.Join(pipes, "events")))
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_DATA_HOME=" + dir, "XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"SEXTANT_CACHE=" + filepath.Join(dir, "cache", "sextant"), "SEXTANT_TEST_OPENAI_KEY=sk-test", "NO_COLOR=1"}
	var procs []*proc
	start := func(extraEnv []string, args ...string) *proc {
		p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
		p.cmd.Dir, p.cmd.Env = dir, append(append([]string(nil), env...), extraEnv...)
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		must(t, p.cmd.Start())
		go func() { p.err = p.cmd.Wait(); close(p.done) }()
		procs = append(procs, p)
		return p
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	stop := func(p *proc) {
		p.cmd.Process.Signal(syscall.SIGTERM)
		if err := p.wait(); err != nil {
			t.Errorf("%v: %v\n%s", p.cmd.Args, err, p.out.String())
		}
	}

	// The server holds the store; workers write through it.
	storeDir := filepath.Join(dir, "store")
	sv := start(nil, "serve", "--addr", "127.0.0.1:0", "--store", storeDir)
	url := serveURL(t, storeDir, sv)
	worker := func(extraEnv ...string) *proc {
		return start(extraEnv, "worker", "--temporal", srv.HostPort, "--task-queue", "procs", "--pipelines", pipes,
			"--store-url", url, "--heartbeat", "200ms")
	}

	ctx := context.Background()
	c := srv.Dial(t)

	// 1. Two workers, both armed to die right after recording their first
	// LLM answer. The routine has one LLM step, so whichever worker takes
	// it dies there; the other retries the step from the recording (no
	// live call, so its failpoint never fires) and finishes the run.
	armed := failpoint.Env + "=" + failpoint.ChatRecorded + ":1"
	x, y := worker(armed), worker(armed)
	onePrep := prepare(t, filepath.Join(one, "pipeline.toml"))
	must(t, temporal.Start(ctx, c, "procs", temporal.RunInput{Pipeline: "kill-one", Strategy: onePrep.Strategy.Hash(), Task: "kill-0",
		Input: map[string]any{"topic": "one"}, Heartbeat: 2 * time.Second}))
	var dead, alive *proc
	select {
	case <-x.done:
		dead, alive = x, y
	case <-y.done:
		dead, alive = y, x
	}
	if ws, ok := dead.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the failpoint did not kill the worker: %v\n%s", dead.err, dead.out.String())
	}
	res, err := temporal.Result(ctx, c, "kill-0")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusCompleted || res.Steps != 3 || fmt.Sprint(res.Output["s3"]) != "map[done:true]" {
		t.Fatalf("kill-0: %+v", res)
	}
	if total, most := up.count(); total != 1 || most != 1 {
		t.Fatalf("upstream saw %d calls for kill-0, want 1 (the survivor answered from the recording)", total)
	}
	select {
	case <-alive.done:
		t.Fatalf("both workers died: %v\n%s", alive.err, alive.out.String())
	default:
	}
	stop(alive) // still armed: the examples make live (scripted) calls

	// 2. A lone worker dies right after recording s2's answer (of three).
	doomed := worker(failpoint.Env + "=" + failpoint.ChatRecorded + ":2")
	killPrep := prepare(t, filepath.Join(kill, "pipeline.toml"))
	must(t, temporal.Start(ctx, c, "procs", temporal.RunInput{Pipeline: "kill-chain", Strategy: killPrep.Strategy.Hash(), Task: "kill-1",
		Input: map[string]any{"topic": "durability"}, Heartbeat: 2 * time.Second}))
	doomed.wait()
	if ws, ok := doomed.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the failpoint did not kill the worker: %v\n%s", doomed.err, doomed.out.String())
	}
	if total, _ := up.count(); total != 1+2 {
		t.Fatalf("upstream saw %d calls before the kill, want 1+2", total)
	}
	w1, w2 := worker(), worker()
	res, err = temporal.Result(ctx, c, "kill-1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusCompleted || res.Steps != 3 {
		t.Fatalf("kill-1: %s after %d steps (%s)", res.Status, res.Steps, res.Error)
	}
	if total, most := up.count(); total != 1+3 || most != 1 {
		t.Errorf("upstream saw %d calls, at most %d of one prompt; want 3 and 1 (no call billed twice): %v", total, most, up.calls)
	}

	// 3. The examples through the CLI, against local runs.
	localStore := filepath.Join(dir, "local")
	cli := func(args ...string) (*run.Result, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var res run.Result
		if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
			t.Fatalf("%v: exit %d: %v\n%s%s", args, code, jerr, out.String(), errb.String())
		}
		return &res, code
	}
	type pair struct{ local, remote *run.Result }
	results := map[string]pair{}
	for _, e := range examples {
		inputs, _ := filepath.Glob(filepath.Join(pipes, e, "inputs", "*.json"))
		for i, in := range inputs {
			task := fmt.Sprintf("cli-%s-%d", e, i)
			file := filepath.Join(pipes, e, "pipeline.toml")
			local, code := cli("run", file, "--input", in, "--id", task, "--store", localStore, "--json")
			if code == 3 {
				local, code = cli("resume", task, "--set", "answer=yes", "--store", localStore, "--json")
			}
			if code != 0 {
				t.Fatalf("local %s: exit %d: %+v", task, code, local)
			}
			remote, code := cli("run", file, "--input", in, "--id", task, "--temporal", srv.HostPort, "--task-queue", "procs", "--json")
			if code == 3 {
				remote, code = cli("resume", task, "--set", "answer=yes", "--temporal", srv.HostPort, "--task-queue", "procs", "--json")
			}
			if code != 0 {
				t.Fatalf("temporal %s: exit %d: %+v", task, code, remote)
			}
			// The record lands before the workflow closes.
			if _, err := temporal.Result(ctx, c, task); err != nil {
				t.Fatal(err)
			}
			results[task] = pair{local, remote}
		}
	}
	if len(results) != 7 {
		t.Fatalf("%d example runs, want 7", len(results))
	}

	// 4. A run in the foreground (--wait) through a timer, a message
	// (sextant send --temporal) and a signal (sextant signal --temporal).
	q := []string{"--temporal", srv.HostPort, "--task-queue", "procs"}
	fg := start(nil, append([]string{"run", filepath.Join(pipes, "events", "pipeline.toml"), "--id", "ev-cli", "--wait", "--json"}, q...)...)
	// Until the run waits for the message (past its 2 s timer).
	for {
		res, err := temporal.Follow(ctx, c, "ev-cli", temporal.UntilEvent)
		if err == nil && res.Status == store.StatusWaiting {
			break
		}
		if err == nil {
			t.Fatalf("ev-cli: %+v", res)
		}
		// The workflow may not be there yet: sextant run starts it.
		select {
		case <-fg.done:
			t.Fatalf("run --wait ended early: %v\n%s", fg.err, fg.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if res, code := cli(append([]string{"send", "ev-cli", "--message", "approved", "--set", "who=ann", "--json"}, q...)...); code != 3 ||
		len(res.Waits) != 1 || res.Waits[0].Kind != store.WaitSignal {
		t.Fatalf("send: exit %d: %+v", code, res)
	}
	sig := exec.Command(bin, append([]string{"signal", "go", "--pipeline", "events"}, q...)...)
	sig.Dir, sig.Env = dir, env
	if out, err := sig.CombinedOutput(); err != nil || !strings.Contains(string(out), `signal "go" received by 1 task(s)`) {
		t.Fatalf("signal: %v\n%s", err, out)
	}
	if err := fg.wait(); err != nil {
		t.Fatalf("run --wait: %v\n%s", err, fg.out.String())
	}
	var fgRes run.Result
	if err := json.Unmarshal(fg.out.Bytes(), &fgRes); err != nil || fgRes.Status != store.StatusCompleted || fmt.Sprint(fgRes.Output["after"]) != "map[seen:ann]" {
		t.Fatalf("run --wait: %v %+v\n%s", err, fgRes, fg.out.String())
	}
	// 5. With every worker stopped, nothing waits for one: resume fails
	// within --query-timeout naming the task queue (exit 1); send and
	// cancel are left with Temporal (exit 0), which says so.
	evPrep := prepare(t, filepath.Join(pipes, "events", "pipeline.toml"))
	must(t, temporal.Start(ctx, c, "procs", temporal.RunInput{Pipeline: "events", Strategy: evPrep.Strategy.Hash(), Task: "ev-held"}))
	if res, err := temporal.Follow(ctx, c, "ev-held", temporal.UntilEvent); err != nil || res.Status != store.StatusWaiting {
		t.Fatalf("ev-held: %+v %v", res, err)
	}
	stop(w1)
	stop(w2)
	held := append([]string{"--query-timeout", "300ms"}, q...)
	resume := exec.Command(bin, append([]string{"resume", "ev-held", "--set", "answer=yes"}, held...)...)
	resume.Dir, resume.Env = dir, env
	if out, err := resume.CombinedOutput(); resume.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), `no worker is polling task queue "procs"`) {
		t.Fatalf("resume with no worker: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"send", "ev-held", "--message", "approved"}, {"cancel", "ev-held", "--reason", "deploy"}} {
		if res, code := cli(append(append(args, "--json"), held...)...); code != 0 || res.Status != store.StatusRunning ||
			!strings.Contains(res.Error, `held by Temporal: no worker is polling task queue "procs"`) {
			t.Fatalf("%s with no worker: exit %d: %+v", args[0], code, res)
		}
	}
	stop(sv)

	// Replay reads the runs Temporal recorded as it reads local ones: the
	// same report from either store.
	for _, e := range examples {
		file := filepath.Join(pipes, e, "pipeline.toml")
		replay := func(dir string) string {
			cmd := exec.Command(bin, "replay", file, "--store", dir, "--report", "json=-")
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("replay %s on %s: %v\n%s", e, dir, err, out)
			}
			return string(out)
		}
		got, want := replay(storeDir), replay(localStore)
		if got != want || !strings.Contains(got, `"fidelity"`) {
			t.Errorf("replay of %s: the report from the Temporal runs differs from the local runs'\n--- got\n%s\n--- want\n%s", e, got, want)
		}
	}

	st := openStoreAt(t, storeDir)
	tree, err := st.Tree(ctx, "kill-1")
	must(t, err)
	steps, chats, served := map[string]int{}, 0, 0
	for _, sp := range tree.Executions[0].Spans {
		if strings.HasPrefix(sp.Name, "step ") {
			steps[sp.Name]++
		}
		if sp.Kind == store.SpanClient {
			chats++
			if sp.Attributes["sextant.recorded"].Bool() {
				served++ // s2's answer, recorded by the worker that died
			}
		}
	}
	if served != 1 {
		t.Errorf("kill-1: %d calls served from a recording, want 1 (s2, retried after the kill)", served)
	}
	if len(steps) != 3 || steps["step s1"] != 1 || steps["step s2"] != 1 || steps["step s3"] != 1 || chats != 3 || len(tree.Recordings) != 3 {
		t.Errorf("kill-1 in the store: steps %v, %d chat spans, %d recordings; want each step once, 3, 3", steps, chats, len(tree.Recordings))
	}
	local := openStoreAt(t, localStore)
	for task, p := range results {
		lt, err := local.Tree(ctx, task)
		must(t, err)
		rt, err := st.Tree(ctx, task)
		must(t, err)
		if got, want := shape(t, p.remote, rt), shape(t, p.local, lt); got != want {
			t.Errorf("%s: the Temporal run differs from the local one\n--- got\n%s--- want\n%s", task, got, want)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func openStoreAt(t testing.TB, dir string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dir, store.NewConfig().WithLogger(quiet()))
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// serveURL waits until the server wrote where it listens (a readiness
// deadline, not a sleep: it returns as soon as the file is there).
func serveURL(t testing.TB, storeDir string, sv *proc) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(filepath.Join(storeDir, serve.InfoFile))
		if err == nil {
			var info serve.Info
			if json.Unmarshal(b, &info) == nil && info.URL != "" {
				return info.URL
			}
		}
		select {
		case <-sv.done:
			t.Fatalf("serve exited: %v\n%s", sv.err, sv.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not start\n%s", sv.out.String())
	return ""
}
