package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/sextant-dev/sextant/host/internal/plugin/wasm/internal/instrument"
)

// An engine is the process-wide wazero state for one cache directory: one
// runtime holding the host modules (wasi, "sextant", "sextant_rt"), its
// compilation cache, and the compiled modules by the sha256 of the file
// they came from. Every Module of the process opened with that cache
// directory shares it, so a replay worker or an evolve probe that opens a
// plugin again gets the compiled code from memory and only instantiates.
//
// Compiled modules stay in the engine after the last Module using them
// closes (the next Open of the same file needs them); Release frees what
// no open Module uses.
type engine struct {
	dir   string // "" = no disk cache
	rt    wazero.Runtime
	cache wazero.CompilationCache

	mu       sync.Mutex
	compiled map[[sha256.Size]byte]*compiled
	// sums remembers the sha256 of the files compiled, by identity.
	sums map[fileKey][sha256.Size]byte
	open int // Modules using the engine
}

// compiled is one instrumented, compiled module. ready is closed once mod
// or err is set, so concurrent Opens of one file compile it once.
type compiled struct {
	ready chan struct{}
	mod   wazero.CompiledModule
	err   error
	users int
}

// fileKey identifies a file's contents without reading it (fileID).
type fileKey struct {
	path        string
	size, mtime int64
	dev, ino    uint64
	ctime       int64
}

// read returns the bytes of the module at path and their sha256. When the
// file is one (same identity, fileID) whose sha256 this engine has
// compiled, or whose sha256 the disk cache recorded (sumPath), it returns
// the sum alone, without reading or hashing the file again: bin is then
// nil, and compile reads the file only if it must instrument it.
func (e *engine) read(path string) (bin []byte, sum [sha256.Size]byte, err error) {
	before, known := e.identify(path)
	if known {
		e.mu.Lock()
		sum, known = e.sums[before]
		if known {
			_, known = e.compiled[sum]
		}
		e.mu.Unlock()
		if known {
			return nil, sum, nil
		}
		if sum, known = e.recordedSum(before); known {
			return nil, sum, nil
		}
	}
	if bin, err = readModule(path); err != nil {
		return nil, sum, err
	}
	sum = sha256.Sum256(bin)
	// Remembered only if the file did not change while it was read.
	if after, ok := e.identify(path); ok && after == before {
		e.mu.Lock()
		e.sums[after] = sum
		e.mu.Unlock()
		e.recordSum(after, sum)
	}
	return bin, sum, nil
}

// sumPath is where the disk cache records the sha256 of the file with
// identity id ("" without a cache directory), so that a new process
// opening an unchanged file neither reads nor hashes it. Like the rest of
// the cache directory, the record is trusted.
func (e *engine) sumPath(id fileKey) string {
	if e.dir == "" {
		return ""
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%q %d %d %d %d %d", id.path, id.size, id.mtime, id.dev, id.ino, id.ctime))
	return filepath.Join(e.dir, "sextant-instrument-v"+instrument.Version, "sums", hex.EncodeToString(h[:16]))
}

func (e *engine) recordedSum(id fileKey) (sum [sha256.Size]byte, ok bool) {
	path := e.sumPath(id)
	if path == "" {
		return sum, false
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) != hex.EncodedLen(sha256.Size) {
		return sum, false
	}
	if _, err := hex.Decode(sum[:], b); err != nil {
		return sum, false
	}
	touchEntry(path, time.Now())
	return sum, true
}

func (e *engine) recordSum(id fileKey, sum [sha256.Size]byte) {
	if path := e.sumPath(id); path != "" {
		_ = writeFileAtomic(path, []byte(hex.EncodeToString(sum[:])))
	}
}

// testHookReadModule, when set by a test, runs whenever a module file
// (not the cache) is read.
var testHookReadModule func(path string)

func readModule(path string) ([]byte, error) {
	if testHookReadModule != nil {
		testHookReadModule(path)
	}
	return os.ReadFile(path)
}

// identify is fileID of the file at path now.
func (e *engine) identify(path string) (fileKey, bool) {
	info, err := os.Stat(path)
	if err != nil {
		return fileKey{}, false
	}
	return fileID(path, info)
}

var engines = struct {
	sync.Mutex
	byDir map[string]*engine
}{byDir: map[string]*engine{}}

// pruned holds the cache directories pruned in this process (under
// engines' lock): an engine released and made again does not walk its
// directory again.
var pruned = map[string]bool{}

// yieldInterval is how many loop headers and function entries a guest
// passes between two deadline checks (instrument.Instrument). At ~2 ns a
// countdown step, a check every 1 000 keeps a runaway guest within a few
// microseconds of its deadline at a cost of a fraction of a percent.
const yieldInterval = 1000

// acquireEngine returns the engine of dir, made on first use, counting
// the caller as a user until release. Making it prunes the disk cache
// (pruneCache), once per directory and process.
func acquireEngine(ctx context.Context, dir string, log *slog.Logger) (*engine, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("cache dir %q: %w", dir, err)
		}
		dir = abs
	}
	engines.Lock()
	defer engines.Unlock()
	if e, ok := engines.byDir[dir]; ok {
		e.mu.Lock()
		e.open++
		e.mu.Unlock()
		return e, nil
	}
	e, err := newEngine(ctx, dir)
	if err != nil {
		return nil, err
	}
	if dir != "" && !pruned[dir] {
		pruned[dir] = true
		pruneCache(dir, CacheMaxAge, time.Now(), log)
	}
	e.open = 1
	engines.byDir[dir] = e
	return e, nil
}

func newEngine(ctx context.Context, dir string) (*engine, error) {
	e := &engine{dir: dir, compiled: map[[sha256.Size]byte]*compiled{}, sums: map[fileKey][sha256.Size]byte{}}
	if dir == "" {
		e.cache = wazero.NewCompilationCache()
	} else {
		var err error
		code := filepath.Join(dir, codeDir, wazeroVersion)
		if e.cache, err = wazero.NewCompilationCacheWithDir(code); err != nil {
			return nil, fmt.Errorf("cache dir %q: %w", dir, err)
		}
		// The version directory's mark says the machine code is in use
		// (pruneCode); its entries are wazero's and are never marked.
		touchEntry(code, time.Now())
	}
	// No WithCloseOnContextDone: termination is the instrumented yield's
	// job (RATIONALE.md, "Why a wasm call is stopped by instrumentation").
	e.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(e.cache))
	ok := false
	defer func() {
		if !ok {
			e.rt.Close(ctx)
			e.cache.Close(ctx)
		}
	}()
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, e.rt); err != nil {
		return nil, fmt.Errorf("wasi: %w", err)
	}
	if err := instantiateHost(ctx, e.rt); err != nil {
		return nil, fmt.Errorf("host functions: %w", err)
	}
	_, err := e.rt.NewHostModuleBuilder(instrument.ImportModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostYield), nil, nil).
		Export(instrument.ImportName).
		Instantiate(ctx)
	if err != nil {
		return nil, fmt.Errorf("host functions: %w", err)
	}
	ok = true
	return e, nil
}

// release ends one user's claim on the engine.
func (e *engine) release() {
	e.mu.Lock()
	e.open--
	e.mu.Unlock()
}

// compile returns the compiled, instrumented form of bin (whose sha256 is
// sum), compiling it on first use. The caller holds it until drop.
//
// bin may be nil when read knew the file's sum; if the module must be
// instrumented again, build reads path, and fails if its contents no
// longer have the sha256 sum.
func (e *engine) compile(ctx context.Context, log *slog.Logger, sum [sha256.Size]byte, bin []byte, path string) (*compiled, error) {
	e.mu.Lock()
	c, ok := e.compiled[sum]
	if ok {
		c.users++
		e.mu.Unlock()
		<-c.ready
		if c.err != nil {
			e.drop(sum, c)
			return nil, c.err
		}
		return c, nil
	}
	c = &compiled{ready: make(chan struct{}), users: 1}
	e.compiled[sum] = c
	e.mu.Unlock()

	c.mod, c.err = e.build(ctx, log, sum, bin, path)
	close(c.ready)
	if c.err != nil {
		e.mu.Lock()
		delete(e.compiled, sum) // a later Open tries again
		e.mu.Unlock()
		return nil, c.err
	}
	return c, nil
}

// drop ends one user's claim on c.
func (e *engine) drop(_ [sha256.Size]byte, c *compiled) {
	e.mu.Lock()
	c.users--
	e.mu.Unlock()
}

// build instruments bin (or reads the instrumented bytes from the disk
// cache) and compiles the result. A nil bin is read from file, whose
// contents must have the sha256 sum.
func (e *engine) build(ctx context.Context, log *slog.Logger, sum [sha256.Size]byte, bin []byte, file string) (wazero.CompiledModule, error) {
	path := e.instrumentedPath(sum)
	if path != "" {
		if cached, err := os.ReadFile(path); err == nil {
			mod, err := compileSafely(func() (wazero.CompiledModule, error) { return e.rt.CompileModule(ctx, cached) })
			if err == nil {
				touchEntry(path, time.Now())
				return mod, nil
			}
			// A damaged entry is rebuilt from the original below.
			log.Warn("instrumented module cache entry unusable; rebuilding it", "path", path, "err", err)
		}
	}
	if bin == nil {
		var err error
		if bin, err = readModule(file); err != nil {
			return nil, err
		}
		if sha256.Sum256(bin) != sum {
			return nil, fmt.Errorf("%w: %s changed while it was opened", ErrChecksum, filepath.Base(file))
		}
	}
	out, err := instrument.Instrument(bin, yieldInterval)
	if err != nil {
		// The rewrite refuses what wazero would refuse too; let wazero
		// say why in its words when it can.
		if _, cerr := compileSafely(func() (wazero.CompiledModule, error) { return e.rt.CompileModule(ctx, bin) }); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	mod, err := compileSafely(func() (wazero.CompiledModule, error) { return e.rt.CompileModule(ctx, out) })
	if err != nil {
		return nil, err
	}
	if path != "" {
		if err := writeFileAtomic(path, out); err != nil {
			log.Debug("instrumented module not cached", "path", path, "err", err)
		}
	}
	return mod, nil
}

// compileSafely runs compile, turning a panic into an error. wazero's
// optimizing compiler panics ("TODO: unsupported …") on the few
// instructions it does not lower; validation refuses them first, so this is
// a backstop: a module must never take the host down.
func compileSafely(compile func() (wazero.CompiledModule, error)) (mod wazero.CompiledModule, err error) {
	defer func() {
		if r := recover(); r != nil {
			mod, err = nil, fmt.Errorf("wazero's compiler failed on the module: %v", r)
		}
	}()
	return compile()
}

// instrumentedPath is where the disk cache keeps the instrumented bytes of
// the module with the given sha256 ("" without a cache directory). They
// are kept because rewriting a multi-megabyte Go module costs more than
// reading it back, and wazero needs the exact bytes to find its machine
// code. Like wazero's machine code beside it, the directory is trusted.
func (e *engine) instrumentedPath(sum [sha256.Size]byte) string {
	if e.dir == "" {
		return ""
	}
	return filepath.Join(e.dir, "sextant-instrument-v"+instrument.Version, hex.EncodeToString(sum[:])+".wasm")
}

// writeFileAtomic writes b to path through a temporary file and a rename,
// so a concurrent reader sees the whole file or none.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// Release frees the compiled code and runtimes that no open Module uses.
// A later Open compiles again (from the disk cache when the Module has a
// CacheDir), as a new process would. Long-running hosts that cycle through
// many plugin versions call it to bound memory; it is safe at any time.
func Release(ctx context.Context) error {
	engines.Lock()
	defer engines.Unlock()
	var errs []error
	for dir, e := range engines.byDir {
		e.mu.Lock()
		for sum, c := range e.compiled {
			select {
			case <-c.ready:
			default:
				continue // being compiled
			}
			if c.users == 0 && c.mod != nil {
				errs = append(errs, c.mod.Close(ctx))
				delete(e.compiled, sum)
			}
		}
		for id, sum := range e.sums {
			if _, ok := e.compiled[sum]; !ok {
				delete(e.sums, id)
			}
		}
		idle := e.open == 0 && len(e.compiled) == 0
		e.mu.Unlock()
		if idle {
			errs = append(errs, e.rt.Close(ctx), e.cache.Close(ctx))
			delete(engines.byDir, dir)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("wasm: release: %w", err)
	}
	return nil
}
