//go:build !notemporal

package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/temporal"
	"github.com/sextant-dev/sextant/host/internal/temporal/temporaltest"
)

// replayOutcome is what a replay command gave: its exit code, stdout (the
// verdict for people) and JSON report.
type replayOutcome struct {
	code           int
	stdout, stderr string
	report         []byte
}

// runReplay runs `sextant ARGS --report json=FILE` in-process, with its
// caches under a fresh directory (so it replays for real). It may run on
// another goroutine than the test's.
func runReplay(dir string, args ...string) replayOutcome {
	report := filepath.Join(dir, "report.json")
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), append(args, "--report", "json="+report), strings.NewReader(""), &stdout, &stderr)
	b, _ := os.ReadFile(report) // none is a difference sameReplay reports
	return replayOutcome{code: code, stdout: stdout.String(), stderr: stderr.String(), report: b}
}

// freshCache points sextant's caches (results, imported datasets) at a
// new directory, so the next replay reads and replays everything.
func freshCache(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("SEXTANT_CACHE", dir)
	return dir
}

// replayWorker starts an in-process worker, as `sextant worker` runs one,
// whose shards run shard (nil: the real ones). It returns the worker's stop.
func replayWorker(t *testing.T, srv *temporaltest.Server, queue string, shard temporal.ReplayShardFunc) (stop func()) {
	t.Helper()
	a := &app{stdout: io.Discard, stderr: io.Discard, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if shard == nil {
		shard = a.replayShard
	}
	w := worker.New(srv.Dial(t), queue, worker.Options{})
	temporal.RegisterReplay(w, shard)
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	stop = sync.OnceFunc(w.Stop)
	t.Cleanup(stop)
	return stop
}

func sameReplay(t *testing.T, what string, local, fanned replayOutcome) {
	t.Helper()
	if fanned.code != local.code {
		t.Fatalf("%s: exit %d on Temporal, %d locally\n%s", what, fanned.code, local.code, fanned.stderr)
	}
	if !bytes.Equal(fanned.report, local.report) {
		t.Fatalf("%s: the JSON reports differ\nTemporal:\n%s\nlocal:\n%s", what, fanned.report, local.report)
	}
	if fanned.stdout != local.stdout {
		t.Fatalf("%s: the verdicts printed differ\nTemporal:\n%s\nlocal:\n%s", what, fanned.stdout, local.stdout)
	}
}

// TestReplayTemporal: a replay fanned out as Temporal activities over two
// workers (a real dev server) gives the byte-identical JSON report, verdict
// and exit status of the local replay, replaying a dataset and a store;
// a shard whose worker dies is retried on the other; a worker whose
// checkout differs ends the replay with exit status 2.
func TestReplayTemporal(t *testing.T) {
	srv := temporaltest.Start(t)
	isolate(t)
	dir := t.TempDir()
	if err := copyTree(filepath.Join(repoRoot(t), "pipelines", "email-triage"), filepath.Join(dir, "pipelines", "email-triage")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	const pipe = "pipelines/email-triage/pipeline.toml"
	const cand = "pipelines/email-triage/candidates/regressing.toml"

	t.Run("dataset", func(t *testing.T) {
		replayWorker(t, srv, "q-dataset", nil)
		replayWorker(t, srv, "q-dataset", nil)
		local := runReplay(freshCache(t), "replay", pipe, "--strategy", cand)
		if local.code != ExitFailed || !strings.Contains(local.stdout, "no-regression") {
			t.Fatalf("the local replay of the regressing candidate: exit %d\n%s%s", local.code, local.stdout, local.stderr)
		}
		fanned := runReplay(freshCache(t), "replay", pipe, "--strategy", cand,
			"--temporal", srv.HostPort, "--task-queue", "q-dataset", "--temporal-shards", "4")
		sameReplay(t, "dataset", local, fanned)

		local = runReplay(freshCache(t), "gate", pipe, "--candidate", cand)
		fanned = runReplay(freshCache(t), "gate", pipe, "--candidate", cand, "--temporal", srv.HostPort, "--task-queue", "q-dataset")
		sameReplay(t, "gate", local, fanned)
	})

	// The same pipeline without [replay] dataset replays its store, which
	// holds the dataset's recorded runs.
	storePipe := filepath.Join(dir, "pipelines", "from-store", "pipeline.toml")
	if err := copyTree(filepath.Join(dir, "pipelines", "email-triage"), filepath.Dir(storePipe)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(storePipe)
	if err != nil {
		t.Fatal(err)
	}
	noDataset := strings.Replace(string(b), "dataset = \"dataset.jsonl\"\n", "", 1)
	if noDataset == string(b) {
		t.Fatal("the example pipeline has no [replay] dataset line to remove")
	}
	if err := os.WriteFile(storePipe, []byte(noDataset), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := Run(context.Background(), []string{"import", "pipelines/email-triage/dataset.jsonl", "--store", "pipelines/from-store/.sextant"},
		strings.NewReader(""), &out, &errs); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, errs.String())
	}
	const spipe = "pipelines/from-store/pipeline.toml"

	t.Run("store, a worker dies", func(t *testing.T) {
		// Worker A dies at its first shard: every shard it takes fails. Only
		// once it has, worker B starts, so A took a shard and B replays it.
		died := make(chan struct{})
		var once sync.Once
		var onA, onB atomic.Int32
		stopA := replayWorker(t, srv, "q-store", func(ctx context.Context, in temporal.ReplayShardInput) ([]replay.Result, error) {
			onA.Add(1)
			once.Do(func() { close(died) })
			return nil, errors.New("worker A died")
		})
		real := &app{stdout: io.Discard, stderr: io.Discard, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		done := make(chan replayOutcome, 1)
		cache := freshCache(t)
		go func() {
			done <- runReplay(cache, "replay", spipe, "--temporal", srv.HostPort, "--task-queue", "q-store", "--temporal-shards", "3")
		}()
		select {
		case <-died:
		case o := <-done:
			t.Fatalf("the replay ended before worker A took a shard: exit %d\n%s", o.code, o.stderr)
		}
		stopA()
		replayWorker(t, srv, "q-store", func(ctx context.Context, in temporal.ReplayShardInput) ([]replay.Result, error) {
			onB.Add(1)
			return real.replayShard(ctx, in)
		})
		fanned := <-done
		local := runReplay(freshCache(t), "replay", spipe)
		if local.code != ExitOK || !strings.Contains(local.stdout, "fidelity") {
			t.Fatalf("the local self-replay of the store: exit %d\n%s%s", local.code, local.stdout, local.stderr)
		}
		sameReplay(t, "store", local, fanned)
		if onA.Load() < 1 || onB.Load() != 3 {
			t.Fatalf("worker A ran %d shard attempts, worker B %d; want A at least 1 and B all 3", onA.Load(), onB.Load())
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--shard", "1/2", "--results", "x.jsonl"}, "--temporal shards the replay itself"},
			{[]string{"--temporal-shards", "0"}, "--temporal-shards 0: want at least 1"},
			{[]string{"--otlp-endpoint", "http://127.0.0.1:4318"}, "--otlp-endpoint with --temporal"},
		} {
			o := runReplay(t.TempDir(), append([]string{"replay", pipe, "--temporal", srv.HostPort}, tc.args...)...)
			if o.code != ExitInvalid || !strings.Contains(o.stderr, tc.want) {
				t.Errorf("replay --temporal %s: exit %d, want 2 and %q\n%s", strings.Join(tc.args, " "), o.code, tc.want, o.stderr)
			}
		}
	})

	t.Run("another checkout", func(t *testing.T) {
		real := &app{stdout: io.Discard, stderr: io.Discard, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		var calls atomic.Int32
		replayWorker(t, srv, "q-other", func(ctx context.Context, in temporal.ReplayShardInput) ([]replay.Result, error) {
			calls.Add(1)
			in.PipelineSHA256 = strings.Repeat("0", 64) // as if the worker's pipeline file differed
			return real.replayShard(ctx, in)
		})
		o := runReplay(freshCache(t), "replay", pipe, "--temporal", srv.HostPort, "--task-queue", "q-other", "--temporal-shards", "1")
		if o.code != ExitInvalid || !strings.Contains(o.stderr, "differs from the one the replay was started with") {
			t.Fatalf("a worker on another checkout: exit %d, want 2\n%s", o.code, o.stderr)
		}
		t.Logf("a worker on another checkout: %s", o.stderr)
		if calls.Load() != 1 {
			t.Fatalf("the shard ran %d times: an invalid shard is not retried", calls.Load())
		}
	})
}
