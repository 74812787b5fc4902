package replay_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// TestStoreDigest: the digest workers check a store replay against
// changes with what the replay reads — a completed task more, a reward
// more — and with nothing else.
func TestStoreDigest(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile(exampleDataset)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), ".sextant"), store.NewConfig().WithSyncCheckpoints(false))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	digest := func() string {
		t.Helper()
		d, err := replay.StoreDigest(ctx, s, "email-triage")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	empty := digest()
	if _, err := s.Import(ctx, bytes.NewReader(data), "dataset.jsonl"); err != nil {
		t.Fatal(err)
	}
	imported := digest()
	if imported == empty || digest() != imported {
		t.Fatalf("digest before and after the import: %s, %s (again %s)", empty, imported, digest())
	}
	if other, err := replay.StoreDigest(ctx, s, "another-pipeline"); err != nil || other != empty {
		t.Fatalf("another pipeline's digest: %s, %v; want the empty one", other, err)
	}
	var first string
	s.EachTask(ctx, store.Query{Pipeline: "email-triage"}, func(tk *store.Task) error {
		if first == "" {
			first = tk.ID
		}
		return nil
	})
	if err := s.AddReward(ctx, &store.Reward{Task: first, Value: -1}); err != nil {
		t.Fatal(err)
	}
	if digest() == imported {
		t.Fatal("a reward more left the digest unchanged")
	}
}

// TestFileRefs: a file goes to a worker as its path from the root and
// its digest; the worker finds it again and refuses one that differs.
func TestFileRefs(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "sub", "pipeline.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("name = \"p\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, sum, err := replay.FileRef(root, path)
	if err != nil || rel != "sub/pipeline.toml" || len(sum) != 64 {
		t.Fatalf("FileRef: %q %q %v", rel, sum, err)
	}
	other := t.TempDir()
	if got, _ := replay.Rel(root, other); got != other {
		t.Fatalf("a path outside the root: %q, want it absolute", got)
	}
	back := replay.Abs(root, rel)
	if back != path || replay.Abs(root, other) != other {
		t.Fatalf("Abs: %q, want %q", back, path)
	}
	if err := replay.CheckDigest("pipeline", back, sum); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("name = \"q\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = replay.CheckDigest("pipeline", back, sum)
	if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "differs from the one the replay was started with (sha256 ") {
		t.Fatalf("a changed file: %v", err)
	}
	if err := replay.CheckDigest("dataset", filepath.Join(root, "gone"), sum); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("a missing file: %v", err)
	}
}
