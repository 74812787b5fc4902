package replay_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

const exampleDataset = "../../../pipelines/email-triage/dataset.jsonl"

// countTasks opens the dataset and counts its tasks.
func countTasks(t *testing.T, cache string) int {
	t.Helper()
	ctx := context.Background()
	s, err := replay.OpenDataset(ctx, exampleDataset, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	if err := s.EachTask(ctx, store.Query{}, func(*store.Task) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// datasetDirs lists the cache's dataset directories.
func datasetDirs(t *testing.T, cache string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(cache, "datasets"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestOpenDatasetImportsOnce: the first open imports the dataset into a
// store keyed by its content; the next opens reuse it.
func TestOpenDatasetImportsOnce(t *testing.T) {
	cache := t.TempDir()
	n := countTasks(t, cache)
	if n == 0 {
		t.Fatal("the example dataset imported no task")
	}
	dirs := datasetDirs(t, cache)
	if len(dirs) != 1 {
		t.Fatalf("dataset directories %v, want one", dirs)
	}
	marker := filepath.Join(cache, "datasets", dirs[0], ".imported")
	before, err := os.Stat(marker)
	if err != nil {
		t.Fatal(err)
	}
	if countTasks(t, cache) != n {
		t.Fatal("the second open reads other tasks")
	}
	if after, err := os.Stat(marker); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the second open imported again (%v)", err)
	}
}

// TestOpenDatasetReplacesCrashedImport: a dataset directory without its
// marker (an import killed half-way) is imported again, not read.
func TestOpenDatasetReplacesCrashedImport(t *testing.T) {
	cache := t.TempDir()
	n := countTasks(t, cache)
	dir := filepath.Join(cache, "datasets", datasetDirs(t, cache)[0])
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := countTasks(t, cache); got != n {
		t.Fatalf("after a crashed import: %d tasks, want %d", got, n)
	}
	if dirs := datasetDirs(t, cache); len(dirs) != 1 {
		t.Fatalf("dataset directories %v, want one (no import directory left)", dirs)
	}
}

// TestOpenDatasetConcurrent: replays started at once all open the dataset,
// whichever import lands first.
func TestOpenDatasetConcurrent(t *testing.T) {
	cache := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := replay.OpenDataset(context.Background(), exampleDataset, cache, nil)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
	if dirs := datasetDirs(t, cache); len(dirs) != 1 {
		t.Fatalf("dataset directories %v, want one", dirs)
	}
}

// TestOpenDatasetInvalid: a dataset that does not import is invalid input
// and leaves nothing in the cache.
func TestOpenDatasetInvalid(t *testing.T) {
	cache := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(cache, "missing.jsonl")} {
		_, err := replay.OpenDataset(context.Background(), path, cache, nil)
		if !errors.Is(err, sdk.ErrInvalid) {
			t.Fatalf("%s: err %v, want an invalid-input error", path, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "datasets")); len(entries) != 0 {
		t.Fatalf("a failed import left %v", entries)
	}
}
