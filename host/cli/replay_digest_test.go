package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestReplayStoreDigest: the digest workers check a store replay against
// changes with what the replay reads — a completed task more, a reward
// more — and with nothing else.
func TestReplayStoreDigest(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "pipelines", "email-triage", "dataset.jsonl"))
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
		d, err := replayStoreDigest(ctx, s, "email-triage")
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
	if other, err := replayStoreDigest(ctx, s, "another-pipeline"); err != nil || other != empty {
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
