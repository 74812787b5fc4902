package replay

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ParseShard reads a shard "I/N" (1-based, as --shard takes it and a
// results header records it) into a 0-based index and the total; "" is
// no sharding (0, 0).
func ParseShard(s string) (int, int, error) {
	if s == "" {
		return 0, 0, nil
	}
	i, n, ok := strings.Cut(s, "/")
	a, err1 := strconv.Atoi(i)
	b, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || b < 1 || a < 1 || a > b {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 1 ≤ I ≤ N, or auto", s)
	}
	return a - 1, b, nil
}

// The environment variables ResolveShard reads for "auto".
const (
	EnvK8sIndex    = "JOB_COMPLETION_INDEX" // Kubernetes Indexed Job, 0-based
	EnvShardTotal  = "SEXTANT_SHARD_TOTAL"  // the total for a Kubernetes Indexed Job (or --shard-total)
	EnvGitLabIndex = "CI_NODE_INDEX"        // GitLab parallel jobs, 1-based
	EnvGitLabTotal = "CI_NODE_TOTAL"
)

// ResolveShard turns --shard into a 0-based index and a total (0, 0 for no
// sharding); total is --shard-total (0 when not given). "auto" takes them
// from the CI engine that runs the job: a Kubernetes Indexed Job
// (JOB_COMPLETION_INDEX, 0-based, with the total from total or
// SEXTANT_SHARD_TOTAL) or GitLab's parallel jobs (CI_NODE_INDEX, 1-based,
// and CI_NODE_TOTAL). Every error is a mistake on the command line.
func ResolveShard(flag string, total int, getenv func(string) string) (int, int, error) {
	if flag != "auto" {
		if total != 0 {
			return 0, 0, errors.New("--shard-total goes with --shard auto")
		}
		return ParseShard(flag)
	}
	if idx := getenv(EnvK8sIndex); idx != "" {
		return k8sShard(idx, total, getenv)
	}
	if idx := getenv(EnvGitLabIndex); idx != "" {
		t := getenv(EnvGitLabTotal)
		i, err1 := strconv.Atoi(idx)
		n, err2 := strconv.Atoi(t)
		if err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
			return 0, 0, fmt.Errorf("--shard auto: %s=%q and %s=%q: want 1 ≤ index ≤ total", EnvGitLabIndex, idx, EnvGitLabTotal, t)
		}
		if total != 0 && total != n {
			return 0, 0, fmt.Errorf("--shard auto: --shard-total %d disagrees with %s=%d", total, EnvGitLabTotal, n)
		}
		return i - 1, n, nil
	}
	return 0, 0, fmt.Errorf("--shard auto: no shard index in the environment: set %s (Kubernetes Indexed Job) with --shard-total or %s, or %s and %s (GitLab parallel jobs), or pass --shard I/N",
		EnvK8sIndex, EnvShardTotal, EnvGitLabIndex, EnvGitLabTotal)
}

// k8sShard is ResolveShard's Kubernetes Indexed Job: the index idx
// (0-based) of a job whose total is total, else SEXTANT_SHARD_TOTAL.
func k8sShard(idx string, total int, getenv func(string) string) (int, int, error) {
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 {
		return 0, 0, fmt.Errorf("--shard auto: %s=%q is not an index (0, 1, …)", EnvK8sIndex, idx)
	}
	n := total
	if n == 0 {
		t := getenv(EnvShardTotal)
		if t == "" {
			return 0, 0, fmt.Errorf("--shard auto: %s=%s but no total: pass --shard-total N (the Job's completions) or set %s", EnvK8sIndex, idx, EnvShardTotal)
		}
		if n, err = strconv.Atoi(t); err != nil || n < 1 {
			return 0, 0, fmt.Errorf("--shard auto: %s=%q is not a positive count", EnvShardTotal, t)
		}
	}
	if n < 1 || i >= n {
		return 0, 0, fmt.Errorf("--shard auto: %s=%d is not below the total %d", EnvK8sIndex, i, n)
	}
	return i, n, nil
}
