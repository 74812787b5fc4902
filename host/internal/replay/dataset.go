package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// CacheDir is sextant's cache directory: $SEXTANT_CACHE, else the user
// cache directory's sextant. Replays keep their result cache
// (replay-cache) and imported datasets (datasets) in it.
func CacheDir() string {
	if d := os.Getenv("SEXTANT_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sextant")
	}
	return filepath.Join(os.TempDir(), "sextant")
}

// importedMarker marks a dataset store whose import completed.
const importedMarker = ".imported"

// OpenDataset opens the recorded tasks of a dataset (a JSONL file, as
// sextant export writes) as a read-only store for a replay to read. The
// dataset is imported once into a store under cacheDir/datasets keyed by
// its content, and later replays of the same bytes open that store. A
// dataset that cannot be read or imported is invalid input
// (errors.Is(err, sdk.ErrInvalid)).
func OpenDataset(ctx context.Context, path, cacheDir string, logger *slog.Logger) (*store.Store, error) {
	// Streamed, never held whole: hashed in one pass, imported (Import
	// reads line by line) in another.
	data, err := readfile.Open(path, readfile.MaxDataset)
	if err != nil {
		return nil, invalidError{fmt.Errorf("dataset: %w", err)}
	}
	defer data.Close()
	h := sha256.New()
	if _, err := io.Copy(h, data); err != nil {
		return nil, invalidError{fmt.Errorf("dataset: %w", err)}
	}
	dir := filepath.Join(cacheDir, "datasets", hex.EncodeToString(h.Sum(nil)[:12]))
	if _, err := os.Stat(filepath.Join(dir, importedMarker)); err != nil {
		if _, err := data.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		if err := importDataset(ctx, path, data, dir, logger); err != nil {
			return nil, err
		}
	}
	s, err := store.Open(ctx, dir, store.NewConfig().WithLogger(logger).WithReadOnly(true).WithSyncCheckpoints(false))
	if err != nil {
		return nil, fmt.Errorf("open dataset store %s: %w", dir, err)
	}
	return s, nil
}

// OpenDatasetAnswers opens, writable, the store that keeps the answers of
// calls replays of a dataset made live (Config.Record): beside the
// dataset's import (OpenDataset's store), created on first use, so the
// next replay of the same dataset finds them and makes no such call again.
func OpenDatasetAnswers(ctx context.Context, dataset *store.Store, logger *slog.Logger) (*store.Store, error) {
	dir := dataset.Dir() + ".live"
	s, err := store.Open(ctx, dir, store.NewConfig().WithLogger(logger))
	if err != nil {
		return nil, fmt.Errorf("open the live answers of dataset store %s: %w", dataset.Dir(), err)
	}
	return s, nil
}

// importDataset imports a dataset into the store dir, crash-safe and safe
// to race: each import writes a directory of its own and renames it into
// place once complete (marked), so replays started at once (shards on one
// machine) may all import it; the first rename wins and the others use the
// winner's (the same data). A directory without the marker is an import
// that crashed, which is replaced.
func importDataset(ctx context.Context, name string, data io.Reader, dir string, logger *slog.Logger) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".import-*")
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after a successful rename
	s, err := store.Open(ctx, tmp, store.NewConfig().WithLogger(logger).WithSyncCheckpoints(false))
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if _, err := s.Import(ctx, data, name); err != nil {
		s.Close()
		return invalidError{err}
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, importedMarker), nil, 0o644); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if err := os.Rename(tmp, dir); err == nil || imported(dir) {
		return nil // ours, or another replay imported it first
	}
	// A directory without the marker is a crashed import: replace it.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil && !imported(dir) {
		return fmt.Errorf("dataset: %w", err)
	}
	return nil
}

// imported reports whether the dataset store dir is complete.
func imported(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, importedMarker))
	return err == nil
}

// invalidError is input that is not valid: errors.Is(err, sdk.ErrInvalid),
// with the message of the error it wraps.
type invalidError struct{ error }

func (e invalidError) Is(target error) bool { return target == sdk.ErrInvalid }
func (e invalidError) Unwrap() error        { return e.error }
