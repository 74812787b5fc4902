package wasm

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
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

// cacheEntry matches the names of the files a cache directory holds, one
// level below it: wazero's machine code (wazero-VERSION-ARCH-OS/KEY), the
// instrumented modules (sextant-instrument-vN/SHA256.wasm), the recorded
// sums (sextant-instrument-vN/sums/ID), and temporary files a process that
// died left (".tmp" in the name). Nothing else is ever deleted.
var cacheEntry = regexp.MustCompile(`^(wazero-[^/]+/[0-9a-f]{64}|sextant-instrument-v[0-9]+/([0-9a-f]{64}\.wasm|sums/[0-9a-f]{32})|(wazero-[^/]+|sextant-instrument-v[0-9]+(/sums)?)/[^/]*\.tmp[^/]*)$`)

// cacheDir matches the directories a cache directory holds entries in.
var cacheDir = regexp.MustCompile(`^(wazero-[^/]+|sextant-instrument-v[0-9]+(/sums)?)$`)

// pruneCache deletes the entries of cache directory dir last marked
// before now-maxAge, and then the entry directories (of other wazero or
// instrumentation versions) that it left empty. It reports how many files
// it deleted; a file it cannot delete is left for the next time.
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
	if removed > 0 {
		log.Info("wasm cache pruned", "dir", dir, "removed", removed, "unused_for", maxAge.String())
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
