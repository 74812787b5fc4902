//go:build linux || darwin

package wasm

import (
	"io/fs"
	"syscall"
)

// fileID identifies the contents of a file by its device, inode, size and
// change time: any write, rename onto it or chmod changes the ctime, which
// no user can set back. ok is false where the platform does not say.
func fileID(path string, info fs.FileInfo) (id fileKey, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{
		path: path, size: info.Size(), mtime: info.ModTime().UnixNano(),
		dev: uint64(st.Dev), ino: uint64(st.Ino), ctime: ctimeOf(st),
	}, true
}
