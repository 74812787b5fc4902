package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// A replay fanned out to workers on other machines (sextant replay
// --temporal) names its files relative to the project's root and sends
// their digests; each worker replays its shard from its own checkout, and
// refuses one whose files differ.

// StoreDigest digests the completed tasks of pipeline in s and their
// rewards: what a replay of the store selects from and scores with. (A
// task's recordings are checked by the replay itself: a call must match
// one exactly.)
func StoreDigest(ctx context.Context, s *store.Store, pipeline string) (string, error) {
	h := sha256.New()
	err := s.EachTask(ctx, store.Query{Pipeline: pipeline}, func(t *store.Task) error {
		if t.Status != store.StatusCompleted {
			return nil
		}
		rewards, err := s.Rewards(ctx, t.ID)
		if err != nil {
			return err
		}
		b, err := json.Marshal(struct {
			Task    *store.Task    `json:"task"`
			Rewards []store.Reward `json:"rewards"`
		}{t, rewards})
		if err != nil {
			return err
		}
		h.Write(append(b, '\n'))
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Root is what the paths of a fanned-out replay are relative to: the
// directory of sextant.toml, else the working directory.
func Root() (string, error) {
	pf, err := project.Find(".")
	if err != nil {
		return "", invalidError{err}
	}
	if pf != nil {
		return pf.Dir, nil
	}
	return os.Getwd()
}

// Rel is path relative to root (slash-separated), or absolute when it lies
// outside.
func Rel(root, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return abs, nil
	}
	return filepath.ToSlash(rel), nil
}

// Abs resolves a path Rel made against a worker's root.
func Abs(root, path string) string {
	path = filepath.FromSlash(path)
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// FileRef is a file as a worker finds it: its path relative to root and
// the SHA-256 of its bytes.
func FileRef(root, path string) (string, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	rel, err := Rel(root, path)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	return rel, hex.EncodeToString(sum[:]), nil
}

// CheckDigest checks that a worker's file (what names it: "pipeline",
// "dataset") is the one the replay was started with, whose SHA-256 is
// want. A file that differs, or is missing, is invalid input.
func CheckDigest(what, path, want string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return invalidError{fmt.Errorf("%s: %w (run the workers in a checkout of the same project)", what, err)}
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want {
		return invalidError{fmt.Errorf("%s %s differs from the one the replay was started with (sha256 %s here, %s there): run the workers on the same checkout", what, path, got[:12], want[:min(len(want), 12)])}
	}
	return nil
}
