package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Cache keeps replay results across replays, by a key that covers
// everything that can change a result (see Config.Cache). Implementations
// must tolerate several processes reading and writing at once: shards of one
// replay started together on one machine share it.
type Cache interface {
	// Get returns the value stored under key; ok is false when there is
	// none (or it cannot be read).
	Get(key string) (value []byte, ok bool)
	// Put stores value under key, replacing any earlier value.
	Put(key string, value []byte) error
}

// DirCache is a Cache of one file per key under a directory. It takes no
// lock: a value is written to a temporary file and renamed into place, so a
// reader sees a whole value or none, and concurrent writers of one key (who
// write the same bytes) cannot corrupt it.
type DirCache struct{ dir string }

var _ Cache = (*DirCache)(nil)

// OpenDirCache returns the cache kept in dir, creating the directory.
func OpenDirCache(dir string) (*DirCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open replay cache: %w", err)
	}
	return &DirCache{dir: dir}, nil
}

func (c *DirCache) path(key string) string {
	if len(key) < 3 {
		return filepath.Join(c.dir, "_", key)
	}
	return filepath.Join(c.dir, key[:2], key)
}

// Get reads the value under key.
func (c *DirCache) Get(key string) ([]byte, bool) {
	b, err := os.ReadFile(c.path(key))
	return b, err == nil
}

// Put writes the value under key atomically (temporary file, then rename).
func (c *DirCache) Put(key string, value []byte) error {
	p := c.path(key)
	dir := filepath.Dir(p)
	f, err := os.CreateTemp(dir, ".put-*")
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o755); err == nil {
			f, err = os.CreateTemp(dir, ".put-*")
		}
	}
	if err != nil {
		return fmt.Errorf("replay cache: put %s: %w", key, err)
	}
	_, werr := f.Write(value)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("replay cache: put %s: %w", key, err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("replay cache: put %s: %w", key, err)
	}
	return nil
}

// cacheEntry is what the cache holds for one task × strategy: the result
// and the recordings its replay read (key → digest, "" for a miss). A hit
// is used only while every one of those recordings is unchanged, so a
// re-imported dataset with other answers under the same request hashes
// cannot be served stale results.
type cacheEntry struct {
	Result Result            `json:"result"`
	Reads  map[string]string `json:"reads,omitempty"`
}

// cacheFormat names the layout of keys and entries; bump it when either
// changes.
const cacheFormat = "sextant-replay-cache/2"

// fingerprint digests everything about a pipeline that can change a
// replayed task's result: the pipeline's effective content (steps, prompts,
// templates, score, limits, providers, plugin grants, prices, redaction),
// the routine's bytes, every provider rules file's bytes, each plugin the
// pipeline runs (its manifest and artifact bytes; builtins by sextant's
// version), and sextant's version itself.
//
// # Notes
//
//   - Secrets never enter it: keys come from the environment and the
//     pipeline holds only the variable's name (api_key_env), which is
//     included (it is configuration: another variable may hold another
//     account's key).
//   - Fields that select or judge tasks but do not change one task's
//     result are left out, so changing them keeps the cache warm: the
//     description, [replay] (sample, workers, seed, dataset; on_miss is
//     part of the key on its own), [evolve], [[gates]], [store] dir.
func fingerprint(p *pipeline.Pipeline, reg *plugin.Registry, version string) (string, error) {
	h := sha256.New()
	put := func(label string, b []byte) {
		fmt.Fprintf(h, "%s %d\n", label, len(b))
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	put("format", []byte(cacheFormat))
	put("sextant", []byte(version))
	eff := *p
	eff.Description = ""
	eff.Replay = pipeline.Replay{}
	eff.Evolve = pipeline.Evolve{}
	eff.Gates = nil
	eff.Store.Dir = ""
	eff.Strategy = pipeline.StrategyRef{} // strategies are keyed by content hash
	content, err := json.Marshal(eff)
	if err != nil {
		return "", fmt.Errorf("replay cache key: pipeline: %w", err)
	}
	put("pipeline", content)
	file := func(label, path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("replay cache key: %s: %w", label, err)
		}
		sum := sha256.Sum256(b)
		put(label, sum[:])
		return nil
	}
	if err := file("routine", p.Path(p.Routine.File)); err != nil {
		return "", err
	}
	for _, d := range p.Routine.Decisions { // a business rule task's result
		if err := file("decision "+d, p.Path(d)); err != nil {
			return "", err
		}
	}
	for _, a := range p.Score.Assert { // a json_schema assertion's verdict
		if a.Schema != "" {
			if err := file("assert schema "+a.Schema, p.Path(a.Schema)); err != nil {
				return "", err
			}
		}
	}
	names := []string{p.Routine.Navigator}
	providers := make([]string, 0, len(p.Providers))
	for n, pr := range p.Providers {
		providers = append(providers, n)
		names = append(names, pr.Use)
	}
	sort.Strings(providers)
	for _, n := range providers {
		if rules := p.Providers[n].Rules; rules != "" {
			if err := file("rules "+n, p.Path(rules)); err != nil {
				return "", err
			}
		}
	}
	sort.Strings(names)
	for i, n := range names {
		if i > 0 && names[i-1] == n {
			continue
		}
		if err := pluginPrint(n, reg, put, file); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// pluginPrint adds one plugin to the fingerprint: a builtin by its version
// (it is linked into this sextant), a wasm or process plugin by the bytes of
// its manifest and of its artifact.
func pluginPrint(name string, reg *plugin.Registry, put func(string, []byte), file func(string, string) error) error {
	e, ok := reg.Lookup(name)
	if !ok {
		put("plugin "+name, []byte("unresolved"))
		return nil
	}
	put("plugin "+name, []byte(e.Transport+" "+e.Version))
	if e.Manifest == nil {
		return nil
	}
	if err := file("manifest "+name, e.Manifest.Path); err != nil {
		return err
	}
	return file("artifact "+name, e.Manifest.ArtifactPath())
}

// taskDigest digests what the store holds about one recorded task that a
// replay reads: the task (input, truth, tags, clock, strategy), its
// rewards, and its live execution's outcome and trace.
func taskDigest(tree *store.Tree) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(tree.Task)
	for _, r := range tree.Rewards {
		_ = enc.Encode(r.Value)
	}
	if live := liveExecution(tree); live != nil {
		e := live.Execution
		_ = enc.Encode([]any{e.ID, e.Status, e.Error, e.Trace})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// recordingDigest identifies what a recording answers.
func recordingDigest(r *store.Recording) string {
	h := sha256.New()
	h.Write(r.Response)
	fmt.Fprintf(h, "\x00%d %d", r.Usage.InputTokens, r.Usage.OutputTokens)
	return hex.EncodeToString(h.Sum(nil)[:12])
}
