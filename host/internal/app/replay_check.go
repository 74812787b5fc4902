package app

import (
	"errors"
	"fmt"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
)

// ReplayFlags are the flags of sextant replay and gate that are checked
// before anything is loaded.
type ReplayFlags struct {
	// Shard and ShardTotal are --shard and --shard-total, Results
	// --results and Reports the --report specs.
	Shard      string
	ShardTotal int
	Results    string
	Reports    []string
	// Files are the files the replay reads (pipeline, strategies,
	// dataset), which no report may overwrite.
	Files []string
	// Temporal is --temporal's HOST:PORT, TemporalShards
	// --temporal-shards; OTLP is whether --otlp-endpoint was given.
	Temporal       string
	TemporalShards int
	OTLP           bool
}

// Check checks a replay's flags and resolves --shard (replay.ResolveShard,
// reading the CI engine's variables with getenv). Every error is a
// *UsageError.
func (f *ReplayFlags) Check(getenv func(string) string) (shard, shards int, err error) {
	if f.Temporal != "" {
		if err := f.checkTemporal(); err != nil {
			return 0, 0, &UsageError{err}
		}
	}
	if shard, shards, err = replay.ResolveShard(f.Shard, f.ShardTotal, getenv); err != nil {
		return 0, 0, &UsageError{err}
	}
	if shards > 0 && f.Results == "" {
		return 0, 0, &UsageError{errors.New("--shard needs --results FILE: a shard collects results for sextant merge, which judges them")}
	}
	if shards > 0 && len(f.Reports) > 0 {
		return 0, 0, &UsageError{errors.New("--report with --shard: a shard holds part of the tasks; pass --report to sextant merge, which judges the whole")}
	}
	return shard, shards, CheckReports(f.Reports, append(f.Files, f.Results)...)
}

// checkTemporal checks the flags of replay --temporal.
func (f *ReplayFlags) checkTemporal() error {
	if f.Shard != "" || f.ShardTotal != 0 || f.Results != "" {
		return errors.New("--temporal shards the replay itself: --shard and --results are for CI shards that sextant merge judges")
	}
	if f.OTLP {
		return errors.New("--otlp-endpoint with --temporal: the workers replay, and do not export spans; export from a local replay")
	}
	if f.TemporalShards < 1 {
		return fmt.Errorf("--temporal-shards %d: want at least 1", f.TemporalShards)
	}
	return nil
}

// CheckCandidate checks the flags of gate --candidate-pipeline as Check
// does. --temporal is refused with what to do instead: Temporal workers
// replay the strategies of the pipeline they check out; a candidate
// pipeline is split across CI jobs with --shard and sextant merge.
func (f *ReplayFlags) CheckCandidate(getenv func(string) string) (shard, shards int, err error) {
	if f.Temporal != "" {
		return 0, 0, &UsageError{errors.New("--temporal cannot be used with --candidate-pipeline: Temporal workers replay the strategies of the pipeline they check out, not a candidate pipeline; instead, split the gate across CI jobs: gate --candidate-pipeline FILE --shard I/N --results FILE in each, then sextant merge the results files")}
	}
	return f.Check(getenv)
}

// CheckReports checks --report FORMAT=PATH specs (report.CheckSpecs)
// against the files the command reads or writes; a bad one is a
// *UsageError.
func CheckReports(specs []string, files ...string) error {
	if err := report.CheckSpecs(specs, files...); err != nil {
		return &UsageError{err}
	}
	return nil
}
