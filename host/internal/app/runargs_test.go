package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestPrepareRun: --set fields go over the input file's, the truth and
// tags reach the run's input; a bad --set is a usage error, and bad input
// or a message no start event waits for is invalid input.
func TestPrepareRun(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	inputFile := filepath.Join(filepath.Dir(f.pipeline), "inputs", "invoice.json")
	a := RunArgs{Pipeline: f.pipeline, InputFile: inputFile, Sets: []string{"subject=hi"},
		TruthFile: `{"label":"invoice"}`, TaskID: "t1", Tags: []string{"x"}, Stdin: strings.NewReader("")}
	prep, in, err := PrepareRun(ctx, a, prepare)
	if err != nil {
		t.Fatal(err)
	}
	prep.Close(ctx)
	if in.ID != "t1" || in.Input["subject"] != "hi" || len(in.Truth) == 0 || len(in.Tags) != 1 || in.Start != "" {
		t.Fatalf("input: %+v", in)
	}

	bad := a
	bad.Sets = []string{"no-equals"}
	var ue *UsageError
	if _, _, err := PrepareRun(ctx, bad, prepare); !errors.As(err, &ue) {
		t.Fatalf("a bad --set: %v, want a usage error", err)
	}
	broken := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(broken, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad = a
	bad.InputFile = broken
	if _, _, err := PrepareRun(ctx, bad, prepare); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("a broken --input: %v, want invalid input", err)
	}
	bad = a
	bad.Message = "no-such-message"
	if _, _, err := PrepareRun(ctx, bad, prepare); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("an unknown --message: %v, want invalid input", err)
	}
}
