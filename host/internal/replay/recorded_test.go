package replay_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// copyTriage copies the email-triage example into a new directory, with
// edit applied to the named file's text, and returns its pipeline's path.
func copyTriage(t *testing.T, file string, edit func(string) string) string {
	t.Helper()
	src := filepath.Dir(triage)
	dst := t.TempDir()
	for _, f := range []string{"pipeline.toml", "email-triage.bpmn", "responses.toml", "strategies/email-handler.toml", "dataset.jsonl"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == file {
			b = []byte(edit(string(b)))
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dst, "pipeline.toml")
}

// TestRecordedHashes: a live run records the routine's and the rules
// file's hashes on its task.
func TestRecordedHashes(t *testing.T) {
	src := record(t, 1)
	tree, err := src.Tree(context.Background(), "task-000")
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Task.Routine) != 64 || len(tree.Task.Rules["default"]) != 64 || len(tree.Task.Rules) != 1 {
		t.Fatalf("routine %q, rules %v", tree.Task.Routine, tree.Task.Rules)
	}
}

// TestChangedSinceRecorded: a strategy whose content changed under the
// version its tasks were recorded with, or under the same strategy a
// routine (or, with on_miss = live, a rules file), refuses the replay
// (invalid input, exit 2), naming the file, both hashes and a task.
func TestChangedSinceRecorded(t *testing.T) {
	src := record(t, 3)
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	text, err := os.ReadFile("../../../pipelines/email-triage/strategies/email-handler.toml")
	if err != nil {
		t.Fatal(err)
	}
	edited, err := strategy.Parse("edited.toml", []byte(strings.Replace(string(text), "description = \"", "description = \"Edited: ", 1)))
	if err != nil {
		t.Fatal(err)
	}
	bumped, err := strategy.Parse("bumped.toml", []byte(strings.Replace(strings.Replace(string(text), "description = \"", "description = \"Edited: ", 1), `version = "2.0.0"`, `version = "2.0.1"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	prepareAt := func(path string) func(context.Context) (*run.Prepared, error) {
		return func(ctx context.Context) (*run.Prepared, error) {
			entries, err := plugin.Discover(nil, sdk.Registered())
			if err != nil {
				return nil, err
			}
			return run.Prepare(ctx, path, plugin.NewRegistry(entries), quiet)
		}
	}
	routine := copyTriage(t, "email-triage.bpmn", func(s string) string { return s + "<!-- edited -->\n" })
	rules := copyTriage(t, "responses.toml", func(s string) string { return s + "# edited\n" })
	short := func(h string) string { return h[:12] + "…" }
	for _, tc := range []struct {
		name     string
		pipeline string
		st       *strategy.Strategy
		onMiss   string
		want     string // "" for no error
	}{
		{"unchanged", triage, base, "", ""},
		{"strategy edited, version kept", triage, edited, "", "email-handler 2.0.0 changed since its tasks were recorded (hash " +
			short(base.Hash()) + " → " + short(edited.Hash()) + "; 3 tasks, task task-000): bump its version"},
		{"strategy edited, version bumped", triage, bumped, "", ""},
		{"routine edited", routine, base, "", "routine email-triage.bpmn changed since the tasks of email-handler 2.0.0 were recorded (hash "},
		{"rules edited, on_miss fail", rules, base, "", ""},
		{"rules edited, on_miss live", rules, base, replay.MissLive, "rules responses.toml (providers.default) changed since the tasks of email-handler 2.0.0 were recorded (hash "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := replay.Config{Prepare: prepareAt(tc.pipeline), Source: src, Pipeline: "email-triage", Strategies: []*strategy.Strategy{tc.st},
				Workers: 1, OnMiss: tc.onMiss, Logger: quiet}
			n := 0
			err := replay.Run(context.Background(), cfg, func(replay.Result) error { n++; return nil })
			if tc.want == "" {
				if err != nil || n != 3 {
					t.Fatalf("%d results, err %v", n, err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, replay.ErrChanged) || !errors.Is(err, sdk.ErrInvalid) || n != 0 {
				t.Fatalf("%d results, err %v\nwant prefix %s", n, err, tc.want)
			}
		})
	}
}

// TestChangedIgnoresOldRecordings: tasks recorded before routine and rules
// hashes were kept are checked for their strategy only.
func TestChangedIgnoresOldRecordings(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data, err := os.ReadFile(filepath.Join(filepath.Dir(triage), "dataset.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(ctx, strings.NewReader(string(data)), "dataset.jsonl"); err != nil {
		t.Fatal(err)
	}
	routine := copyTriage(t, "email-triage.bpmn", func(s string) string { return s + "<!-- edited -->\n" })
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	cfg := replay.Config{Source: s, Pipeline: "email-triage", Strategies: []*strategy.Strategy{base}, Workers: 2, Sample: 5, Logger: quiet,
		Prepare: func(ctx context.Context) (*run.Prepared, error) {
			entries, err := plugin.Discover(nil, sdk.Registered())
			if err != nil {
				return nil, err
			}
			return run.Prepare(ctx, routine, plugin.NewRegistry(entries), quiet)
		}}
	if res := replayAll(t, cfg); len(res) != 5 {
		t.Fatalf("%d results", len(res))
	}
}
