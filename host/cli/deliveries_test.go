package cli

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// waitTask is the testscript command `waittask TASK STATUS [WAITS]`: it
// reads the store of $SEXTANT_STORE (beside its writer, through a
// snapshot) until task TASK has status STATUS and, when given, a wait
// whose text matches the regexp WAITS — so that a script talks to a
// background `sextant run --wait` only once it waits, without guessing a
// delay. It gives up after two minutes.
func waitTask(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waittask TASK STATUS [WAITS]")
	}
	var re *regexp.Regexp
	if len(args) == 3 {
		re = regexp.MustCompile(args[2])
	}
	dir := ts.MkAbs(ts.Getenv("SEXTANT_STORE"))
	cfg := store.NewConfig().WithReadOnly(true).WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	deadline := time.Now().Add(2 * time.Minute)
	last := "no store"
	for time.Now().Before(deadline) {
		if s, err := store.Open(context.Background(), dir, cfg); err == nil {
			t, err := s.Task(context.Background(), args[0])
			s.Close()
			if err == nil {
				last = string(t.Status)
				ok := string(t.Status) == args[1]
				if re != nil {
					matched := false
					for _, w := range t.Waits {
						matched = matched || re.MatchString(w.String())
						last += "; " + w.String()
					}
					ok = ok && matched
				}
				if ok {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not a guess at a duration
	}
	ts.Fatalf("waittask: task %s never became %s (last: %s)", args[0], args[1], last)
}
