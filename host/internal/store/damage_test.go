package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/sextant-dev/sextant/sdk"
)

// smallFiles makes a test store span many tables and value logs.
func smallFiles(t testing.TB) {
	t.Helper()
	prev := testBadgerOptions
	testBadgerOptions = func(o badger.Options) badger.Options {
		return o.WithMemTableSize(24 << 10).WithBaseTableSize(16 << 10).WithValueLogFileSize(1 << 20).
			WithNumCompactors(0).WithNumLevelZeroTablesStall(1000)
	}
	t.Cleanup(func() { testBadgerOptions = prev })
}

// damageTasks is how many tasks writeDamageStore writes.
const damageTasks = 60

// writeDamageStore writes damageTasks tasks, each with an execution,
// spans, a checkpoint, a reward and a recording, through the real store
// code, and closes the store.
func writeDamageStore(t testing.TB, dir string) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	pad := strings.Repeat("lorem ipsum ", 250)
	for i := range damageTasks {
		id := fmt.Sprintf("task-%03d", i)
		must(t, s.CreateTask(ctx, &Task{ID: id, Pipeline: "email-triage", Input: json.RawMessage(`{"body":"mail ` + id + `"}`),
			Tags: []string{"bulk"}, Strategy: StrategyRef{Name: "h", Version: "1.0.0"}}))
		e := &Execution{Task: id, ID: "e1", Mode: "live"}
		must(t, s.CreateExecution(ctx, e))
		req := &sdk.ChatRequest{Model: "m", Messages: []sdk.Message{{Role: "user", Content: "classify " + id}}}
		resp := &sdk.ChatResponse{Text: pad, Usage: sdk.Usage{InputTokens: 40, OutputTokens: 9}}
		rec, err := NewChatRecording(s.Redactor(), "openai", id, req, resp, time.Millisecond)
		must(t, err)
		must(t, s.PutRecording(ctx, rec))
		var spans []Span
		for j := range 8 {
			spans = append(spans, Span{Task: id, Execution: "e1", Name: fmt.Sprintf("step %d", j),
				Start: t0, End: t0.Add(time.Millisecond), Attributes: Attributes{"pad": String(pad[:2800+j])}})
		}
		must(t, s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: "e1", Step: 1, State: []byte(`{"n":1}`)}, spans...))
		e.Status, e.Ended = StatusCompleted, t0.Add(time.Second)
		must(t, s.PutExecution(ctx, e))
		must(t, s.SetTaskStatus(ctx, id, StatusCompleted))
		must(t, s.AddReward(ctx, &Reward{Task: id, Value: 1, Tags: []string{"user"}}))
	}
	must(t, s.Close())
}

func listFiles(t testing.TB, dir, ext string) []string {
	t.Helper()
	var out []string
	ents, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ext {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// Each kind of damage, done to a real store written by the store code:
// reads name the damage (no panic, no silent loss, no "kept changing"),
// Check reports it, and Salvage copies every task it did not touch,
// byte for byte.
func TestDamage(t *testing.T) {
	smallFiles(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	writeDamageStore(t, dir)
	if n := len(listFiles(t, dir, ".sst")); n < 3 {
		t.Fatalf("the test store has %d tables, want several", n)
	}
	original := exportTasks(t, dir)
	if len(original) != damageTasks {
		t.Fatalf("exported %d tasks, want %d", len(original), damageTasks)
	}
	cases := []struct {
		name   string
		damage func(dir string) string // returns the damaged file
		// known: the keys the damaged file held are known (a damaged
		// block's range, a value log); else any task may have lost a
		// record to it, and none is vouched for.
		known bool
	}{
		{"flip 64 bytes in the largest table", func(dir string) string { f := largest(t, dir, ".sst"); flip(t, dir, f, 64); return f }, true},
		{"flip 32 bytes in the smallest full table", func(dir string) string { f := smallestFull(t, dir); flip(t, dir, f, 32); return f }, true},
		{"truncate a value log", func(dir string) string { f := listFiles(t, dir, ".vlog")[0]; trunc(t, dir, f); return f }, true},
		{"delete a table", func(dir string) string {
			f := listFiles(t, dir, ".sst")[0]
			must(t, os.Remove(filepath.Join(dir, f)))
			return f
		}, true},
		{"damage the MANIFEST", func(dir string) string { flip(t, dir, "MANIFEST", 16); return "MANIFEST" }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), ".sextant")
			must(t, os.CopyFS(d, os.DirFS(dir)))
			file := c.damage(d)
			s, err := Open(ctx, d, testConfig().WithReadOnly(true))
			must(t, err)
			defer s.Close()

			// Listing and export go on past damage and say what they left out.
			ts, err := s.Tasks(ctx, Query{})
			if err != nil && (!errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "damaged")) {
				t.Fatalf("list: %v", err)
			}
			if len(ts) == 0 && c.known {
				t.Error("listed no task")
			}
			var exp bytes.Buffer
			_, xerr := s.Export(ctx, &exp, ExportOptions{})
			if (err == nil) != (xerr == nil) && file != "MANIFEST" {
				t.Errorf("list says %v, export says %v", err, xerr)
			}

			rep, err := s.Check(ctx)
			must(t, err)
			if !rep.Damaged() {
				t.Fatal("check found nothing damaged")
			}
			named := false
			for _, d := range append(append(rep.Files, rep.Tasks...), rep.Keys...) {
				named = named || d.File == file
			}
			if !named && !strings.HasSuffix(file, ".vlog") {
				t.Errorf("check does not name %s: %+v", file, rep.Files)
			}

			to := filepath.Join(t.TempDir(), "salvaged")
			dst, err := Open(ctx, to, testConfig())
			must(t, err)
			sr, err := s.Salvage(ctx, dst)
			must(t, err)
			must(t, dst.Close())
			left := 0
			for _, d := range sr.Left {
				if d.Task != "" {
					left++
				}
			}
			// Where the damaged file's keys are known, every task is
			// either copied or named; where they are not, a task all of
			// whose records were in it cannot be named.
			if c.known && sr.Copied.Tasks+left != damageTasks || sr.Copied.Tasks+left > damageTasks {
				t.Errorf("salvage copied %d tasks and left %d behind; want %d in all", sr.Copied.Tasks, left, damageTasks)
			}
			if len(rep.Tasks) != left {
				t.Errorf("check names %d damaged tasks, salvage left %d", len(rep.Tasks), left)
			}
			// Every task salvaged is the task as written, whole.
			got := exportTasks(t, to)
			if len(got) != sr.Copied.Tasks {
				t.Errorf("the salvaged store exports %d tasks, salvage says %d", len(got), sr.Copied.Tasks)
			}
			for id, lines := range got {
				if lines != original[id] {
					t.Errorf("task %s salvaged differs:\n got: %.300s\nwant: %.300s", id, lines, original[id])
				}
			}
			if file == "MANIFEST" && sr.Copied.Tasks != damageTasks {
				t.Errorf("a damaged MANIFEST loses no table, yet salvage copied %d tasks", sr.Copied.Tasks)
			}
			if c.known && sr.Copied.Tasks == 0 {
				t.Error("salvage copied no task")
			}
			t.Logf("%s: salvaged %d, left %d", file, sr.Copied.Tasks, left)
		})
	}
}

// exportTasks exports the store in dir, read-only, and returns each
// task's lines (recordings left out).
func exportTasks(t *testing.T, dir string) map[string]string {
	t.Helper()
	s, err := Open(context.Background(), dir, testConfig().WithReadOnly(true))
	must(t, err)
	defer s.Close()
	var b bytes.Buffer
	_, err = s.Export(context.Background(), &b, ExportOptions{Checkpoints: true})
	must(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		var rec struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Task string `json:"task"`
		}
		if line == "" || json.Unmarshal([]byte(line), &rec) != nil || rec.Type == "header" || rec.Type == "recording" {
			continue
		}
		id := rec.Task
		if rec.Type == "task" {
			id = rec.ID
		}
		out[id] += line + "\n"
	}
	return out
}

func fileSize(t testing.TB, path string) int64 {
	info, err := os.Stat(path)
	must(t, err)
	return info.Size()
}

func largest(t testing.TB, dir, ext string) string {
	fs := listFiles(t, dir, ext)
	sort.SliceStable(fs, func(i, j int) bool {
		return fileSize(t, filepath.Join(dir, fs[i])) > fileSize(t, filepath.Join(dir, fs[j]))
	})
	return fs[0]
}

// smallestFull returns the smallest table of at least half the largest's
// size: the last table flushed may be a few blocks, each of whose key
// ranges spans every task's index keys, so that damage to it loses all.
func smallestFull(t testing.TB, dir string) string {
	half := fileSize(t, filepath.Join(dir, largest(t, dir, ".sst"))) / 2
	var out string
	for _, f := range listFiles(t, dir, ".sst") {
		if n := fileSize(t, filepath.Join(dir, f)); n >= half && (out == "" || n < fileSize(t, filepath.Join(dir, out))) {
			out = f
		}
	}
	return out
}

// flip inverts n bytes in the middle of a file.
func flip(t testing.TB, dir, name string, n int) {
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	must(t, err)
	mid := len(b) / 2
	for i := mid; i < mid+n && i < len(b); i++ {
		b[i] ^= 0xff
	}
	must(t, os.WriteFile(path, b, 0o644))
}

func trunc(t testing.TB, dir, name string) {
	path := filepath.Join(dir, name)
	must(t, os.Truncate(path, fileSize(t, path)/2))
}

// TestDamageCompleted: a list of completed tasks (no status index: it
// reads each task's status from its summary) leaves out and reports the
// tasks a missing table damaged as a list of every task does, though
// the summary that table held is gone and an older one says otherwise.
func TestDamageCompleted(t *testing.T) {
	smallFiles(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	writeDamageStore(t, dir) // every task completed
	reported := 0
	for _, f := range listFiles(t, dir, ".sst") {
		d := filepath.Join(t.TempDir(), ".sextant")
		must(t, os.CopyFS(d, os.DirFS(dir)))
		must(t, os.Remove(filepath.Join(d, f)))
		s, err := Open(ctx, d, testConfig().WithReadOnly(true))
		must(t, err)
		all, errAll := s.Tasks(ctx, Query{})
		done, errDone := s.Tasks(ctx, Query{Status: StatusCompleted})
		must(t, s.Close())
		var skAll, skDone *SkippedError
		errors.As(errAll, &skAll)
		errors.As(errDone, &skDone)
		if len(done) != len(all) || (skAll == nil) != (skDone == nil) || skAll != nil && len(skAll.Skipped) > len(skDone.Skipped) {
			t.Errorf("without %s: %d tasks listed (%v), %d completed (%v)", f, len(all), errAll, len(done), errDone)
		}
		if skAll != nil {
			reported++
		}
	}
	if reported == 0 {
		t.Fatal("no missing table damaged a task the list reports")
	}
}
