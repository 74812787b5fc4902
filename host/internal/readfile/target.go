package readfile

import (
	"os"
	"path/filepath"
)

// Target is the file path leads to through its symlinks, whether that file
// exists yet or not (a dangling link names the file it will be). A command
// that writes a file beside its path and renames it into place renames
// onto Target(path): renamed onto path, the file would replace the link.
func Target(path string) string {
	for range 40 { // as the kernel's own limit on links followed
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return path
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return path
}
