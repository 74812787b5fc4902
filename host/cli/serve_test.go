package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// signalWriter buffers what is written and closes ready once a line
// containing want has been written.
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	want  string
	ready chan struct{}
	once  sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestServeAndCLI: gate records its verdict in the store; while `sextant
// serve` holds the store, run, feedback, resume and gate go
// through its API instead of failing with "in use" (send and signal ask the
// holder over the store socket since main's run --wait; serve does not
// answer those yet), and reads use
// snapshots as beside any writer. Fails on old main (no serve command,
// feedback and resume refused with "in use").
func TestServeAndCLI(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	pipes := filepath.Join(dir, "pipelines")
	if err := copyTree(filepath.Join(repoRoot(t), "pipelines", "email-triage"), filepath.Join(pipes, "email-triage")); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(pipes, "email-triage", "pipeline.toml")
	st := filepath.Join(dir, ".sextant")
	sextant := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	must := func(wantCode int, args ...string) string {
		t.Helper()
		out, errs, code := sextant(args...)
		if code != wantCode {
			t.Fatalf("sextant %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), code, wantCode, out, errs)
		}
		return out + errs
	}
	must(3, "run", pipe, "--input", filepath.Join(pipes, "email-triage", "inputs", "invoice.json"), "--id", "inv-1", "--store", st)
	must(0, "run", pipe, "--input", filepath.Join(pipes, "email-triage", "inputs", "newsletter.json"), "--id", "news-1", "--store", st)

	// gate records its verdict (the regressing candidate fails).
	must(1, "gate", pipe, "--candidate", filepath.Join(pipes, "email-triage", "candidates", "regressing.toml"), "--store", st)
	verdicts := func() []evolve.Verdict {
		s, err := store.Open(context.Background(), st, store.NewConfig().WithReadOnly(true))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		vs, err := evolve.ListVerdicts(context.Background(), s, "email-triage")
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) > 0 {
			v, err := evolve.GetVerdict(context.Background(), s, vs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			vs[0] = *v
		}
		return vs
	}
	vs := verdicts()
	if len(vs) != 1 || vs[0].Command != "gate" || vs[0].Ruling != "fail" || vs[0].Comparison.Regressed == 0 {
		t.Fatalf("stored verdicts after gate: %+v", vs)
	}
	flipped := 0
	for _, tv := range vs[0].Tasks {
		if tv.Flip == evolve.FlipRegressed {
			flipped++
			if len(tv.BaselineOutput) == 0 || len(tv.CandidateOutput) == 0 || bytes.Equal(tv.BaselineOutput, tv.CandidateOutput) {
				t.Fatalf("flipped task %s: outputs %s / %s", tv.Task, tv.BaselineOutput, tv.CandidateOutput)
			}
		}
	}
	if flipped != vs[0].Comparison.Regressed {
		t.Fatalf("%d tasks marked regressed, comparison says %d", flipped, vs[0].Comparison.Regressed)
	}

	// Two candidates wait for a person; a second store holds a task to
	// import.
	reviews := map[string]string{}
	func() {
		s, err := store.Open(context.Background(), st, store.NewConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, name := range []string{"improving", "regressing"} {
			cand, err := strategy.Load(filepath.Join(pipes, "email-triage", "candidates", name+".toml"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := evolve.Queue(context.Background(), s, "email-triage", evolve.Evaluated{Mutator: "greedy", Strategy: cand,
				Comparison: &sdk.Comparison{Candidate: sdk.StrategyRef{Name: cand.Metadata.Name, Version: cand.Metadata.Version, Hash: cand.Hash()}},
				Result:     evolve.Result{Ruling: sdk.Review}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			reviews[name] = r.ID
		}
	}()
	other := filepath.Join(dir, "other.sextant")
	must(0, "run", pipe, "--input", filepath.Join(pipes, "email-triage", "inputs", "newsletter.json"), "--id", "imported-1", "--store", other)
	dump := filepath.Join(dir, "other.jsonl")
	if err := os.WriteFile(dump, []byte(must(0, "export", "--store", other)), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.jsonl")
	if err := os.WriteFile(garbage, []byte("{\"type\":\"header\"}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Start the server on the store.
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &signalWriter{want: "listening on", ready: make(chan struct{})}
	var serveErr bytes.Buffer
	served := make(chan int, 1)
	go func() {
		served <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--store", st, "--pipelines", pipes}, strings.NewReader(""), stdout, &serveErr)
	}()
	select {
	case <-stdout.ready:
	case code := <-served:
		t.Fatalf("serve exited %d: %s %s", code, stdout.String(), serveErr.String())
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if code := <-served; code != 0 {
				t.Errorf("serve exit %d: %s", code, serveErr.String())
			}
		}
	}
	defer stop()
	b, err := os.ReadFile(filepath.Join(st, serve.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var info serve.Info
	if err := json.Unmarshal(b, &info); err != nil || info.PID != os.Getpid() || !strings.HasPrefix(info.URL, "http://127.0.0.1:") {
		t.Fatalf("info file %s: %v", b, err)
	}

	// Writes go through the API: a run of a pipeline the server serves...
	if out := must(0, "run", pipe, "--input", filepath.Join(pipes, "email-triage", "inputs", "newsletter.json"), "--id", "news-2", "--store", st); !strings.Contains(out, "task news-2 completed") {
		t.Fatalf("run through the server: %s", out)
	}
	// ...but not of another file that has the same pipeline name.
	other = filepath.Join(dir, "other", "email-triage")
	if err := copyTree(filepath.Join(pipes, "email-triage"), other); err != nil {
		t.Fatal(err)
	}
	if out := must(2, "run", filepath.Join(other, "pipeline.toml"), "--input", filepath.Join(other, "inputs", "newsletter.json"), "--store", st); !strings.Contains(out, "the server runs "+pipe+", not ") {
		t.Fatalf("run of another file through the server: %s", out)
	}
	if out := must(0, "feedback", "news-1", "--reward", "1", "--tag", "via-server", "--store", st); !strings.Contains(out, "reward #1 +1 on task news-1") {
		t.Fatalf("feedback: %s", out)
	}
	if out := must(0, "resume", "inv-1", "--set", "answer=yes", "--store", st); !strings.Contains(out, "task inv-1 completed") {
		t.Fatalf("resume: %s", out)
	}
	if out := must(2, "feedback", "nope", "--reward", "1", "--store", st); !strings.Contains(out, "not found") {
		t.Fatalf("feedback on an unknown task: %s", out)
	}
	// send and signal deliver through the API too (no task waits for
	// these: the server's own answer, not "in use").
	if out := must(0, "signal", "nobody-waits", "--store", st); !strings.Contains(out, `signal "nobody-waits" received by 0 task(s)`) {
		t.Fatalf("signal through the server: %s", out)
	}
	if out := must(2, "send", "news-1", "--message", "paid", "--store", st); strings.Contains(out, "in use") || !strings.Contains(out, "send through sextant serve at "+info.URL) {
		t.Fatalf("send through the server: %s", out)
	}
	must(1, "gate", pipe, "--candidate", filepath.Join(pipes, "email-triage", "candidates", "regressing.toml"), "--store", st)
	// import goes through the API, all or nothing, its errors positioned
	// in the file as without a server.
	if out := must(0, "import", dump, "--store", st); !strings.Contains(out, "imported 1 tasks") {
		t.Fatalf("import through the server: %s", out)
	}
	if out := must(2, "import", dump, "--store", st); !strings.Contains(out, "through sextant serve at "+info.URL) || !strings.Contains(out, "imported-1") {
		t.Fatalf("import of a task the store has: %s", out)
	}
	if out := must(2, "import", garbage, "--store", st); !strings.Contains(out, garbage+":1: format") {
		t.Fatalf("import of a bad file: %s", out)
	}
	// review approve and reject go through the API; the server promotes
	// beside the pipeline it serves.
	if out := must(0, "review", "reject", reviews["regressing"], "--by", "ana", "--note", "worse", "--store", st); !strings.Contains(out, reviews["regressing"]+" rejected") {
		t.Fatalf("reject through the server: %s", out)
	}
	if out := must(2, "review", "approve", reviews["improving"], "--by", "ana", "--dir", dir, "--store", st); !strings.Contains(out, "--dir: sextant serve at "+info.URL) {
		t.Fatalf("approve --dir through the server: %s", out)
	}
	if out := must(0, "review", "approve", reviews["improving"], "--by", "ana", "--store", st); !strings.Contains(out, reviews["improving"]+" approved → "+filepath.Join(pipes, "email-triage", "strategies")) {
		t.Fatalf("approve through the server: %s", out)
	}
	if out := must(1, "review", "approve", reviews["improving"], "--by", "ana", "--store", st); !strings.Contains(out, "already decided") {
		t.Fatalf("approve twice through the server: %s", out)
	}
	// A command that does not go through the API names the server.
	a := &app{command: "sextant evolve", logger: slog.New(slog.DiscardHandler)}
	if _, err := a.openStore(context.Background(), st, createStore); err == nil || !errors.Is(err, store.ErrLocked) ||
		err.Error() != fmt.Sprintf("store %s is held by sextant serve at %s (pid %d), and sextant evolve does not go through its API: stop the server (or use its API) and run it again", st, info.URL, info.PID) {
		t.Fatalf("open while the server holds the store: %v", err)
	}
	// Reads use a snapshot beside the server.
	if out := must(0, "runs", "--store", st); !strings.Contains(out, "inv-1") || !strings.Contains(out, "completed") {
		t.Fatalf("runs: %s", out)
	}
	resp, err := http.Get(info.URL + "/api/v1/comparisons")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var list struct{ Comparisons []evolve.Verdict }
	if err := json.Unmarshal(body, &list); err != nil || len(list.Comparisons) != 2 {
		t.Fatalf("comparisons through the server: %v %s", err, body)
	}
	resp, err = http.Get(info.URL + "/api/v1/tasks?reward_tag=via-server")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"id":"news-1"`) {
		t.Fatalf("reward tag via the server: %s", body)
	}

	stop()
	if _, err := os.Stat(filepath.Join(st, serve.InfoFile)); !os.IsNotExist(err) {
		t.Fatalf("info file left behind: %v", err)
	}
	// Without the server the CLI writes the store itself again.
	must(0, "feedback", "news-1", "--reward", "0.5", "--store", st)
}

// TestServeMountsProxyAndOTLP: sextant serve answers the recording proxy's
// and the OTLP receiver's routes beside its API. In --replay with nothing
// recorded a chat call gets OpenAI's error shape (never an upstream call),
// stored as a failed replay (--record-replays), and an OTLP/HTTP JSON
// export becomes a task the API lists.
func TestServeMountsProxyAndOTLP(t *testing.T) {
	isolate(t)
	st := filepath.Join(t.TempDir(), ".sextant")
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &signalWriter{want: "listening on", ready: make(chan struct{})}
	var serveErr bytes.Buffer
	served := make(chan int, 1)
	go func() {
		served <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--store", st, "--replay", "--record-replays"}, strings.NewReader(""), stdout, &serveErr)
	}()
	select {
	case <-stdout.ready:
	case code := <-served:
		t.Fatalf("serve exited %d: %s %s", code, stdout.String(), serveErr.String())
	}
	defer func() {
		cancel()
		if code := <-served; code != 0 {
			t.Errorf("serve exit %d: %s", code, serveErr.String())
		}
	}()
	b, err := os.ReadFile(filepath.Join(st, serve.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var info serve.Info
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(info.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	code, body := post("/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
	if code != http.StatusNotFound || !strings.Contains(body, `"code":"recording_not_found"`) || !strings.Contains(body, `"error":{`) {
		t.Fatalf("chat completion in replay with nothing recorded: %d %s", code, body)
	}
	if resp, err := http.Get(info.URL + "/api/v1/tasks?pipeline=proxy"); err != nil {
		t.Fatal(err)
	} else {
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(got), `"status":"failed"`) {
			t.Fatalf("the missed replay is not stored (--record-replays): %s", got)
		}
	}
	trace := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"ts-agent"}},{"key":"sextant.task","value":{"stringValue":"otel-run-1"}}]},
	"scopeSpans":[{"scope":{"name":"x"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"chat gpt-4o","kind":3,
	"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000001000000000",
	"attributes":[{"key":"gen_ai.request.model","value":{"stringValue":"gpt-4o"}},{"key":"gen_ai.usage.input_tokens","value":{"intValue":"12"}}]}]}]}]}`
	if code, body := post("/v1/traces", trace); code != http.StatusOK {
		t.Fatalf("OTLP export: %d %s", code, body)
	}
	resp, err := http.Get(info.URL + "/api/v1/tasks/otel-run-1")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(got), "chat gpt-4o") {
		t.Fatalf("ingested task through the API: %d %s", resp.StatusCode, got)
	}
}
