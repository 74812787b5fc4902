package buildinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

// TestIdentity: a release is its version; a development build is named
// by its executable's bytes, the same on every call.
func TestIdentity(t *testing.T) {
	if got := Identity("v1.4.0"); got != "v1.4.0" {
		t.Fatalf("Identity(v1.4.0) = %q", got)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	want := "dev+" + hex.EncodeToString(sum[:12])
	if got := Identity("dev"); got != want || Identity("dev") != got {
		t.Fatalf("Identity(dev) = %q, want %q on every call", got, want)
	}
	if _, err := fileHash(exe + ".missing"); err == nil {
		t.Fatal("the hash of a missing file: no error")
	}
}
