package process

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// verifiedExe is what the runner executes for a pinned plugin: a private
// copy of the bytes whose sha256 matched, made while hashing, so a file
// swapped or rewritten at the plugin's path after the check never runs.
type verifiedExe struct {
	// path is what exec.Cmd.Path gets.
	path string
	// extra, when not nil, must be the child's fd 3 (exec.Cmd.ExtraFiles):
	// path is then /proc/self/fd/3, which the kernel opens in the child at
	// execve and an interpreter named by a #! line can open too.
	extra *os.File
	// release frees the copy once the child has exec'd (or failed to).
	release func()
}

// copyBuf is the chunk size of the hash-and-copy loop.
const copyBuf = 1 << 20

// hashCopy copies everything src holds into dst, hashing it on the way, and
// checks the sum against want.
func hashCopy(dst io.Writer, src io.Reader, want string) error {
	h := sha256.New()
	if _, err := io.CopyBuffer(io.MultiWriter(h, dst), src, make([]byte, copyBuf)); err != nil {
		return fmt.Errorf("verify sha256: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return &transportError{msg: fmt.Sprintf("verify sha256: mismatch (want %s…, got %s…)", want[:12], got[:12]), cause: ErrChecksum}
	}
	return nil
}

// tempExe is the portable way: copy into a fresh file in dir (go-plugin's
// private 0700 socket directory), read-only and executable by the owner,
// closed before exec. release removes it.
func tempExe(path, dir, want string) (*verifiedExe, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify sha256: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(dir, "plugin-"+filepath.Base(path)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o500)
	if err != nil {
		return nil, fmt.Errorf("copy plugin binary: %w", err)
	}
	name := dst.Name()
	release := func() { os.Remove(name) }
	err = hashCopy(dst, src, want)
	if cerr := dst.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("copy plugin binary: %w", cerr)
	}
	if err != nil {
		release()
		return nil, err
	}
	return &verifiedExe{path: name, release: release}, nil
}
