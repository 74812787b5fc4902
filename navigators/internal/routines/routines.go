// Package routines keeps a navigator's parsed routines by content hash:
// Load parses a routine once, later calls refer to it by hash. Navigators
// keep no run state, but parsing on every call would be waste.
package routines

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"

	"github.com/sextant-dev/sextant/sdk"
)

// Cache holds parsed routines of type R by the hex sha256 of their source.
// The zero value is ready to use and safe for concurrent use.
type Cache[R any] struct {
	mu sync.Mutex
	m  map[string]R
	// last is the routine Get found last: a run's calls name one routine
	// call after call, and comparing its hash costs less than locking and
	// hashing 64 characters again (~1 µs of a navigator call in a wasm
	// guest). Entries are never removed from m, so last never goes stale.
	last atomic.Pointer[entry[R]]
}

type entry[R any] struct {
	hash string
	r    R
}

// Load returns the routine parsed from data, calling parse (with the
// content hash) only the first time that content is seen. Parse errors
// are not cached.
func (c *Cache[R]) Load(data []byte, parse func(hash string) (R, error)) (R, error) {
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	c.mu.Lock()
	r, ok := c.m[hash]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := parse(hash)
	if err != nil {
		return r, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.m[hash]; ok {
		return prev, nil // another caller parsed it first: keep one
	}
	if c.m == nil {
		c.m = map[string]R{}
	}
	c.m[hash] = r
	return r, nil
}

// Get returns the routine with the given hash, or a bad-request error
// naming the navigator when it was never loaded.
func (c *Cache[R]) Get(navigator, hash string) (R, error) {
	if e := c.last.Load(); e != nil && e.hash == hash {
		return e.r, nil
	}
	c.mu.Lock()
	r, ok := c.m[hash]
	c.mu.Unlock()
	if !ok {
		return r, sdk.Errorf(sdk.CodeBadRequest, "%s: routine %q is not loaded", navigator, hash)
	}
	c.last.Store(&entry[R]{hash: hash, r: r})
	return r, nil
}
