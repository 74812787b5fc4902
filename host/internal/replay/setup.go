package replay

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Settings are a replay's effective settings: the pipeline's [replay]
// table with a command line's Overrides applied.
type Settings struct {
	Sample, Workers int
	Seed            int64
	OnMiss          string
	StratifyBy      string
}

// Overrides are the replay settings given on a command line. Their zero
// value overrides nothing, except Sample, which overrides when ≥ 0.
type Overrides struct {
	Sample, Workers int
	Seed            int64
	OnMiss          string
}

// NewSettings are p's [replay] settings with o applied. An on-miss policy
// other than fail, skip or live, a sample below -1 (unset) and negative
// workers are errors of the command line.
func NewSettings(p *pipeline.Pipeline, o Overrides) (Settings, error) {
	s := Settings{Sample: p.Replay.Sample, Workers: p.Replay.Workers, Seed: p.Replay.Seed, OnMiss: p.Replay.OnMiss, StratifyBy: p.Replay.StratifyBy}
	// -1 is the flag's "not given"; a number below it, or negative
	// workers, is a mistake that would silently mean the default.
	if o.Sample < -1 {
		return s, fmt.Errorf("--sample %d: want a number of tasks, or 0 for all", o.Sample)
	}
	if o.Workers < 0 {
		return s, fmt.Errorf("--workers %d: want at least 1", o.Workers)
	}
	if o.Sample >= 0 {
		s.Sample = o.Sample
	}
	if o.Workers > 0 {
		s.Workers = o.Workers
	}
	if o.Seed != 0 {
		s.Seed = o.Seed
	}
	if o.OnMiss != "" {
		if err := CheckOnMiss(o.OnMiss); err != nil {
			return s, fmt.Errorf("--on-miss: %w", err)
		}
		s.OnMiss = o.OnMiss
	}
	return s, nil
}

// CheckOnMiss checks an on-miss policy: fail, skip or live.
func CheckOnMiss(policy string) error {
	switch policy {
	case MissFail, MissSkip, MissLive:
		return nil
	}
	return fmt.Errorf("%q is not fail, skip or live", policy)
}

// PrepareOptions are how a replay prepares a pipeline: without provider
// credentials, since every call is served from a recording, unless a miss
// goes to the real provider (on_miss = "live"). For a live replay it
// checks at once that every api_key_env is set, so a missing key is one
// clear error before any work, not one per task.
func PrepareOptions(p *pipeline.Pipeline, onMiss string) ([]run.PrepareOption, error) {
	if onMiss == MissLive {
		return nil, run.CheckCredentials(p)
	}
	return []run.PrepareOption{run.WithoutCredentials()}, nil
}

// DatasetOf is the dataset a replay of p reads: flag (--dataset) when
// given, else p's [replay] dataset; "" for p's own store.
func DatasetOf(p *pipeline.Pipeline, flag string) string {
	if flag == "" && p.Replay.Dataset != "" {
		return p.Path(p.Replay.Dataset)
	}
	return flag
}

// Setup is what a command replays and how: a loaded pipeline (whose
// definition is read and validated once per command, not once per
// worker), its plugins and its settings.
type Setup struct {
	Loaded   *run.Loaded
	Plugins  *plugin.Registry
	Settings Settings
	// Prepare are the options each worker opens Loaded with
	// (PrepareOptions).
	Prepare []run.PrepareOption
	// Version names the sextant build, for the result cache's keys.
	Version string
	// CacheDir holds the result cache (replay-cache); "" is no cache.
	CacheDir string
	Logger   *slog.Logger
}

// Config is the replay configuration over the recorded tasks of src,
// without strategies. A result cache that does not open is left off, and
// the replay runs without it.
func (s Setup) Config(src *store.Store) Config {
	p := s.Loaded.Pipeline
	loaded, opts := s.Loaded, s.Prepare
	c := Config{Source: src, Pipeline: p.Name, OnMiss: s.Settings.OnMiss, Workers: s.Settings.Workers, MaxLiveCostUSD: p.Replay.MaxLiveCostUSD,
		Sample: s.Settings.Sample, StratifyBy: s.Settings.StratifyBy, Seed: s.Settings.Seed, Logger: s.Logger,
		Plugins: s.Plugins, Version: s.Version, Prepare: func(ctx context.Context) (*run.Prepared, error) {
			return loaded.Open(ctx, opts...)
		}}
	if s.CacheDir != "" {
		cache, err := OpenDirCache(filepath.Join(s.CacheDir, "replay-cache"))
		if err == nil {
			c.Cache = cache
		} else if s.Logger != nil {
			s.Logger.Warn("replay result cache off", "err", err)
		}
	}
	return c
}
