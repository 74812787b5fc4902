package buildinfo

import (
	"os"
	"strconv"
	"sync"

	"github.com/sextant-dev/sextant/host/internal/readfile"
)

// Identity names this build for the caches whose entries only the build
// that made them may reuse (the replay result cache): the release
// version; for a development build (release "dev"), which has no version
// to tell it from the next one, "dev+" and a hash of its own executable.
// A development build that cannot read itself gets a name no other
// process has, and so shares no entry.
func Identity(release string) string {
	if release != "dev" {
		return release
	}
	return devIdentity()
}

var devIdentity = sync.OnceValue(func() string {
	if exe, err := os.Executable(); err == nil {
		if h, err := fileHash(exe); err == nil {
			return "dev+" + h
		}
	}
	return "dev+unidentified-" + strconv.Itoa(os.Getpid())
})

// fileHash is the first 12 bytes of the SHA-256 of the file at path, in hex.
func fileHash(path string) (string, error) {
	h, err := readfile.SHA256(path)
	if err != nil {
		return "", err
	}
	return h[:24], nil
}
