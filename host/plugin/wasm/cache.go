package wasm

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/tetratelabs/wazero"
)

// Compiled code is shared through one wazero CompilationCache per cache
// directory per process. Sharing it makes every Module of a process use one
// engine, so a second Open of the same file finds the machine code in
// memory (reference-counted, released when the last Module closes) and a
// new process finds it on disk.
//
// The directory is handed to wazero.NewCompilationCacheWithDir as is rather
// than keyed by us: wazero already writes into a subdirectory
// "wazero-<version>-<GOARCH>-<GOOS>" and names each entry by a sha256 over
// the module bytes (plus the CPU features and the termination checks the
// code was compiled with), which is the key DESIGN §3.2 asks for. Keying
// the directory ourselves as well would only duplicate entries.
var caches = struct {
	sync.Mutex
	byDir map[string]wazero.CompilationCache
}{byDir: map[string]wazero.CompilationCache{}}

// compilationCache returns the process-wide cache for dir ("" = memory only).
func compilationCache(dir string) (wazero.CompilationCache, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("cache dir %q: %w", dir, err)
		}
		dir = abs
	}
	caches.Lock()
	defer caches.Unlock()
	if c, ok := caches.byDir[dir]; ok {
		return c, nil
	}
	var c wazero.CompilationCache
	if dir == "" {
		c = wazero.NewCompilationCache()
	} else {
		var err error
		if c, err = wazero.NewCompilationCacheWithDir(dir); err != nil {
			return nil, fmt.Errorf("cache dir %q: %w", dir, err)
		}
	}
	caches.byDir[dir] = c
	return c, nil
}
