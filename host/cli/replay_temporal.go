package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// The defaults of replay --temporal's namespace and task queue: those of
// `sextant worker`, whose workers run the shards.
const (
	replayDefaultNamespace = "default"
	replayDefaultTaskQueue = "sextant"
	replayDefaultShards    = 8
)

// replayTemporalFlags are replay's --temporal flags.
type replayTemporalFlags struct {
	hostPort, namespace, taskQueue string
	shards                         int
}

func (f *replayTemporalFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.hostPort, "temporal", "", "HOST:PORT of a Temporal front end: fan the replay out as activities over the sextant workers polling --task-queue, and judge here")
	c.Flags().StringVar(&f.namespace, "namespace", replayDefaultNamespace, "Temporal namespace (with --temporal)")
	c.Flags().StringVar(&f.taskQueue, "task-queue", replayDefaultTaskQueue, "Temporal task queue (with --temporal)")
	c.Flags().IntVar(&f.shards, "temporal-shards", replayDefaultShards, "number of shard activities a replay fans out to (with --temporal)")
}

// checkReplayTemporal checks the flags of replay --temporal.
func (a *app) checkReplayTemporal(f *replayFlags) error {
	if f.shard != "" || f.shardTotal != 0 || f.results != "" {
		return usageErr(errors.New("--temporal shards the replay itself: --shard and --results are for CI shards that sextant merge judges"))
	}
	if a.otlpEndpoint != "" {
		return usageErr(errors.New("--otlp-endpoint with --temporal: the workers replay, and do not export spans; export from a local replay"))
	}
	if f.temporal.shards < 1 {
		return usageErr(fmt.Errorf("--temporal-shards %d: want at least 1", f.temporal.shards))
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		a.logger.Warn("a replay on Temporal exports no spans (its workers replay): OTEL_EXPORTER_OTLP_ENDPOINT is not used")
	}
	return nil
}

// replayStoreDigest digests the completed tasks of a pipeline in a store
// and their rewards: what a replay of the store selects from and scores
// with. (A task's recordings are checked by the replay itself: a call
// must match one exactly.)
func replayStoreDigest(ctx context.Context, s *store.Store, name string) (string, error) {
	h := sha256.New()
	err := s.EachTask(ctx, store.Query{Pipeline: name}, func(t *store.Task) error {
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

// replayRoot is what the paths a replay sends its workers are relative
// to: the directory of sextant.toml, else the working directory.
func replayRoot() (string, error) {
	pf, err := project.Find(".")
	if err != nil {
		return "", withInvalid(err)
	}
	if pf != nil {
		return pf.Dir, nil
	}
	return os.Getwd()
}

// replayRel is path relative to root, or absolute when it lies outside.
func replayRel(root, path string) (string, error) {
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

// replayAbs resolves a path the CLI sent against the worker's root.
func replayAbs(root, path string) string {
	path = filepath.FromSlash(path)
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// replayFileRef is a file as a worker finds it: its path relative to root
// and the SHA-256 of its bytes.
func replayFileRef(root, path string) (string, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	rel, err := replayRel(root, path)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	return rel, hex.EncodeToString(sum[:]), nil
}

// replayCheckDigest checks that the worker's file is the one the CLI replays.
func replayCheckDigest(what, path, want string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return withInvalid(fmt.Errorf("%s: %w (run the workers in a checkout of the same project)", what, err))
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want {
		return withInvalid(fmt.Errorf("%s %s differs from the one the replay was started with (sha256 %s here, %s there): run the workers on the same checkout", what, path, got[:12], replayShort(want)))
	}
	return nil
}

func replayShort(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// replayCommandName is the command a replay's verdict is recorded under.
func replayCommandName(needCandidate bool) string {
	if needCandidate {
		return "gate"
	}
	return "replay"
}
