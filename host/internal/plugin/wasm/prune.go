package wasm

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
)

// CacheMaxAge is how long an entry of a disk cache directory is kept
// without being used. Every rebuilt plugin leaves its machine code
// (megabytes) and its instrumented bytes behind; the first Open of a
// directory in a process deletes what no Open has used for this long.
// Using an entry marks it (its modification time) at most once a day.
const CacheMaxAge = 30 * 24 * time.Hour

// touchAfter is how old an entry's mark may get before a use renews it.
const touchAfter = 24 * time.Hour

// codeDir is the directory of a cache directory that holds wazero's
// machine code, one subdirectory per wazero version (wazeroVersion).
// What wazero writes inside a version directory is wazero's own business:
// sextant never reads, marks or deletes single files there, only whole
// version directories, so it does not depend on wazero's private layout.
const codeDir = "wazero-code"

// wazeroVersion is the version of the wazero module this binary is built
// with, as the build information records it ("unknown" without it).
var wazeroVersion = func() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/tetratelabs/wazero" {
				if d.Replace != nil {
					d = d.Replace
				}
				if d.Version != "" {
					return d.Version
				}
			}
		}
	}
	return "unknown"
}()

// cacheEntry matches the names of the files a cache directory holds one
// level below it that sextant itself writes: the instrumented modules
// (sextant-instrument-vN/SHA256.wasm), the recorded sums
// (sextant-instrument-vN/sums/ID), and temporary files a process that died
// left (".tmp" in the name). Nothing else is ever deleted file by file.
var cacheEntry = regexp.MustCompile(`^sextant-instrument-v[0-9]+/([0-9a-f]{64}\.wasm|sums/[0-9a-f]{32}|(sums/)?[^/]*\.tmp[^/]*)$`)

// cacheDir matches the directories a cache directory holds entries in.
var cacheDir = regexp.MustCompile(`^sextant-instrument-v[0-9]+(/sums)?$`)

// legacyCode matches the machine code directories that builds of sextant
// with a patched wazero wrote at the top of a cache directory.
var legacyCode = regexp.MustCompile(`^wazero-[0-9][^/]*-sextant\.[0-9]+-[^/]+$`)

// pruneCache deletes the entries of cache directory dir last marked
// before now-maxAge, then the entry directories (of other instrumentation
// versions) that it left empty, and the machine code directories (of any
// wazero version) unused for as long. It reports how many files and
// machine code directories it deleted; what it cannot delete is left for
// the next time.
func pruneCache(dir string, maxAge time.Duration, now time.Time, log *slog.Logger) int {
	cutoff := now.Add(-maxAge)
	removed := 0
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: leave it
		}
		rel, rerr := filepath.Rel(dir, path)
		if rerr != nil || rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == codeDir || legacyCode.MatchString(rel) {
				return filepath.SkipDir // whole directories, below
			}
			if strings.Count(rel, "/") > 1 {
				return filepath.SkipDir // deeper than any entry
			}
			// Its age as the walk found it: deleting entries below
			// makes it new.
			if info, err := d.Info(); err == nil && cacheDir.MatchString(rel) && info.ModTime().Before(cutoff) {
				dirs = append(dirs, path)
			}
			return nil
		}
		if !d.Type().IsRegular() || !cacheEntry.MatchString(rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			return nil
		}
		if err := os.Remove(path); err == nil {
			removed++
		} else {
			log.Debug("wasm cache entry not pruned", "path", path, "err", err)
		}
		return nil
	})
	if err != nil {
		log.Debug("wasm cache not pruned", "dir", dir, "err", err)
	}
	// Deepest first: sums/ before its parent. Only directories that were
	// old before this walk: one a process has just made is about to be
	// written into.
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i]) // fails unless empty, as it should
	}
	removed += pruneCode(dir, cutoff, log)
	if removed > 0 {
		log.Info("wasm cache pruned", "dir", dir, "removed", removed, "unused_for", maxAge.String())
	}
	return removed
}

// pruneCode deletes the machine code directories of dir whose mark is
// older than cutoff: a wazero version's directory under codeDir (its mark
// is renewed by every engine that uses it, markCode), and the directories
// an older, patched build left at the top.
func pruneCode(dir string, cutoff time.Time, log *slog.Logger) int {
	var old []string
	if ents, err := os.ReadDir(filepath.Join(dir, codeDir)); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				old = append(old, filepath.Join(dir, codeDir, e.Name()))
			}
		}
	}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if e.IsDir() && legacyCode.MatchString(e.Name()) {
				old = append(old, filepath.Join(dir, e.Name()))
			}
		}
	}
	removed := 0
	for _, p := range old {
		info, err := os.Stat(p)
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			log.Debug("wasm machine code not pruned", "path", p, "err", err)
			continue
		}
		removed++
	}
	return removed
}

// touchEntry marks the cache entry at path as used now when its mark is
// older than touchAfter, so that pruneCache keeps it.
func touchEntry(path string, now time.Time) {
	if info, err := os.Stat(path); err == nil && now.Sub(info.ModTime()) > touchAfter {
		_ = os.Chtimes(path, now, now)
	}
}
