package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The helper process: the test binary re-executed with
// SEXTANT_STORE_HELPER set plays a second sextant process.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("SEXTANT_STORE_HELPER")
	if mode == "" {
		t.Skip("only runs as a helper process")
	}
	dir := os.Getenv("SEXTANT_STORE_DIR")
	ctx := context.Background()
	log := quietLog()
	if os.Getenv("SEXTANT_STORE_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stdout, nil))
	}
	cfg := NewConfig().WithLogger(log).WithSyncCheckpoints(os.Getenv("SEXTANT_STORE_NOSYNC") == "")
	if n, err := strconv.Atoi(os.Getenv("SEXTANT_STORE_MIGRATE_BATCH")); err == nil {
		migrateBatch = n
	}
	s, err := Open(ctx, dir, cfg)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	switch mode {
	case "hold":
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin) // until the parent closes our stdin or kills us
		s.Close()
		os.Exit(0)
	case "steps":
		// A run that commits one step (checkpoint and span together) per
		// line on stdin, so the parent knows exactly what is committed.
		if err := s.CreateTask(ctx, &Task{ID: "crash", Pipeline: "p"}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if err := s.CreateExecution(ctx, &Execution{Task: "crash", ID: "e1"}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		in := bufio.NewScanner(os.Stdin)
		for step := uint64(1); in.Scan(); step++ {
			state, _ := json.Marshal(map[string]uint64{"step": step})
			sp := Span{Task: "crash", Execution: "e1", Seq: step, Name: "step", Start: time.Now(), End: time.Now()}
			if err := s.Checkpoint(ctx, &Checkpoint{Task: "crash", Execution: "e1", Step: step, State: state}, sp); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
			fmt.Printf("step %d\n", step)
		}
		if err := s.Close(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "busy":
		// A run that checkpoints as fast as it can, rewriting one span
		// that carries the step number with each checkpoint, for 5 000
		// steps; then it holds the store open until stdin closes.
		if err := s.CreateTask(ctx, &Task{ID: "crash", Pipeline: "p"}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if err := s.CreateExecution(ctx, &Execution{Task: "crash", ID: "e1"}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		for step := uint64(1); step <= 5000; step++ {
			state, _ := json.Marshal(map[string]uint64{"step": step})
			sp := Span{Task: "crash", Execution: "e1", Seq: 1, Name: "step", Start: time.Now(), End: time.Now(),
				Attributes: Attributes{"step": Int(int64(step))}}
			if err := s.Checkpoint(ctx, &Checkpoint{Task: "crash", Execution: "e1", Step: step, State: state}, sp); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
			fmt.Printf("step %d\n", step)
		}
		fmt.Println("done")
		io.Copy(io.Discard, os.Stdin)
		if err := s.Close(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "run":
		// A run that checkpoints after every step, forever, until killed.
		task := &Task{ID: "crash", Pipeline: "p"}
		e := &Execution{Task: "crash", ID: "e1"}
		if err := s.CreateTask(ctx, task); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if err := s.CreateExecution(ctx, e); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		for step := uint64(1); ; step++ {
			state, _ := json.Marshal(map[string]uint64{"step": step})
			sp := Span{Task: "crash", Execution: "e1", Seq: step, Name: "step", Start: time.Now(), End: time.Now()}
			if err := s.Checkpoint(ctx, &Checkpoint{Task: "crash", Execution: "e1", Step: step, State: state}, sp); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
			fmt.Printf("step %d\n", step)
		}
	}
	os.Exit(2)
}

// helper starts the helper process in mode on dir and waits until it
// prints the line want (or, for "~text", a line containing text).
func helper(t *testing.T, mode, dir, want string, env ...string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SEXTANT_STORE_HELPER="+mode, "SEXTANT_STORE_DIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "error:") {
			t.Fatalf("helper: %s", sc.Text())
		}
		if sc.Text() == want || (strings.HasPrefix(want, "~") && strings.Contains(sc.Text(), want[1:])) {
			return cmd, stdin, sc
		}
	}
	t.Fatalf("helper ended before printing %q", want)
	return nil, nil, nil
}

func TestLockSecondProcess(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx := context.Background()
	cmd, stdin, _ := helper(t, "hold", ".sextant", "ready")
	pid := cmd.Process.Pid
	want := fmt.Sprintf("store %%s is in use by pid %d (%s -test.run=^TestHelperProcess$ -test.count=1); wait for it to finish, or stop it, and run this command again", pid, filepath.Base(os.Args[0]))

	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"writer", testConfig(), fmt.Sprintf(want, ".sextant")},
		{"writer by another name", testConfig(), fmt.Sprintf(want, ".sextant")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := ".sextant"
			if tt.name == "writer by another name" {
				dir = "./.sextant/"
			}
			s, err := Open(ctx, dir, tt.cfg)
			if err == nil {
				s.Close()
				t.Fatal("second open succeeded")
			}
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("not ErrLocked: %v", err)
			}
			wantErr(t, err, tt.want)
			var le *LockedError
			if !errors.As(err, &le) || le.PID != pid {
				t.Fatalf("LockedError.PID: %+v", le)
			}
		})
	}

	// The holder exits normally: the store is free again.
	stdin.Close()
	must(t, cmd.Wait())
	s, err := Open(ctx, ".sextant", testConfig())
	must(t, err)
	must(t, s.Close())
}

func TestLockReleasedOnKill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sextant")
	cmd, _, _ := helper(t, "hold", dir, "ready")
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	s, err := Open(context.Background(), dir, testConfig())
	must(t, err)
	must(t, s.Close())
}

func TestLockSameProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(context.Background(), dir, testConfig())
	must(t, err)
	defer s.Close()
	_, err = Open(context.Background(), dir, testConfig())
	wantErr(t, err, fmt.Sprintf("store %s is in use by pid %d (%s); wait for it to finish, or stop it, and run this command again", dir, os.Getpid(), holderCommand()))
}

// TestKillDuringRun kills a process that checkpoints after every step
// and checks that the last completed step, and its spans, are there:
// with fsync, and without it (a killed process loses nothing the kernel
// has; fsync is for power loss).
func TestKillDuringRun(t *testing.T) {
	for _, mode := range []string{"sync", "nosync"} {
		t.Run(mode, func(t *testing.T) {
			var env []string
			if mode == "nosync" {
				env = append(env, "SEXTANT_STORE_NOSYNC=1")
			}
			dir := filepath.Join(t.TempDir(), ".sextant")
			cmd, _, sc := helper(t, "run", dir, "step 1", env...)
			var last uint64
			for sc.Scan() {
				fmt.Sscanf(sc.Text(), "step %d", &last)
				if last >= 20 {
					break
				}
			}
			must(t, cmd.Process.Signal(syscall.SIGKILL))
			for sc.Scan() { // what it printed before it died
				fmt.Sscanf(sc.Text(), "step %d", &last)
			}
			cmd.Wait()
			// Steps reported before the kill were committed; one more may have been.

			ctx := context.Background()
			for _, ro := range []bool{true, false} { // read-only first: it must recover the log itself
				s, err := Open(ctx, dir, testConfig().WithReadOnly(ro))
				must(t, err)
				c, err := s.LatestCheckpoint(ctx, "crash", "e1")
				must(t, err)
				if c.Step < last || c.Step > last+1 {
					t.Fatalf("read-only=%v: checkpoint at step %d, last reported %d", ro, c.Step, last)
				}
				var state map[string]uint64
				must(t, json.Unmarshal(c.State, &state))
				spans, err := s.Spans(ctx, "crash", "e1")
				must(t, err)
				if state["step"] != c.Step || uint64(len(spans)) != c.Step {
					t.Fatalf("read-only=%v: step %d, state %v, %d spans: checkpoint and spans not committed together", ro, c.Step, state, len(spans))
				}
				must(t, s.Close())
			}
		})
	}
}

func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")

	_, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	wantErr(t, err, fmt.Sprintf("open store %s: no store here (run a pipeline first, or pass --store)", dir))
	if !errors.Is(err, ErrNoStore) {
		t.Fatal("not ErrNoStore")
	}

	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	seed(t, s, "t1", 3)
	must(t, s.Close())

	r1, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	defer r1.Close()
	r2, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err) // readers share
	defer r2.Close()
	tr, err := r2.Tree(ctx, "t1")
	must(t, err)
	if len(tr.Executions[0].Spans) != 3 {
		t.Fatalf("read %d spans", len(tr.Executions[0].Spans))
	}
	wantErr(t, r1.CreateTask(ctx, &Task{ID: "t2", Pipeline: "p"}), fmt.Sprintf(`create task "t2": store %s: store is open read-only`, dir))
	wantErr(t, r1.AppendSpans(ctx, []Span{{}}), fmt.Sprintf(`write spans: store %s: store is open read-only`, dir))

	// Readers read snapshots: a writer opens beside them, and its writes
	// reach later readers only.
	w, err := Open(ctx, dir, testConfig())
	must(t, err)
	defer w.Close()
	seed(t, w, "t2", 2)
	if _, err := r1.Task(ctx, "t2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an earlier reader sees a later write: %v", err)
	}
	r3, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	defer r3.Close()
	tr, err = r3.Tree(ctx, "t2")
	must(t, err)
	if len(tr.Executions[0].Spans) != 2 {
		t.Fatalf("read %d spans", len(tr.Executions[0].Spans))
	}
}

// A process killed while Badger creates a log file leaves it empty, and
// Badger then refuses to open the directory (badger #2207). Open removes
// such files: they hold no entries.
func TestOpenAfterEmptyLogFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTask(ctx, &Task{ID: "t1", Pipeline: "p", Status: StatusRunning}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, f := range []string{"000099.vlog", "00099.mem"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, ro := range []bool{false, true} {
		s, err := Open(ctx, dir, NewConfig().WithReadOnly(ro))
		if err != nil {
			t.Fatalf("read-only %v: %v", ro, err)
		}
		if _, err := s.Task(ctx, "t1"); err != nil {
			t.Fatalf("read-only %v: %v", ro, err)
		}
		s.Close()
	}
}

// TrimResident only drops resident pages: everything reads back the same,
// and writing goes on, after it.
func TestTrimResident(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), NewConfig().WithSyncCheckpoints(false))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 200; i++ {
		if err := s.CreateTask(ctx, &Task{ID: fmt.Sprintf("t%03d", i), Pipeline: "p", Status: StatusCompleted,
			Input: json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 500)))}); err != nil {
			t.Fatal(err)
		}
	}
	s.TrimResident()
	for i := 0; i < 200; i++ {
		tk, err := s.Task(ctx, fmt.Sprintf("t%03d", i))
		if err != nil || !strings.Contains(string(tk.Input), fmt.Sprintf(`"n":%d,`, i)) {
			t.Fatalf("after trim: %v %s", err, tk.Input)
		}
	}
	if err := s.CreateTask(ctx, &Task{ID: "after", Pipeline: "p", Status: StatusRunning}); err != nil {
		t.Fatal(err)
	}
	s.TrimResident()
	if _, err := s.Task(ctx, "after"); err != nil {
		t.Fatal(err)
	}
}
