package run

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestRecordingKey pins the key a task's provider call is recorded under:
// recordings made before stay found, whatever the length of the ids.
func TestRecordingKey(t *testing.T) {
	for _, tc := range []struct{ task, hash string }{
		{"01JABCDEFGHJKMNPQRSTVWXYZ0", strings.Repeat("ab", 32)},
		{"", ""},
		{strings.Repeat("t", 300), strings.Repeat("h", 300)}, // longer than the stack buffer
	} {
		sum := sha256.Sum256([]byte("sextant.recording.v1\x00" + tc.task + "\x00" + tc.hash))
		if got, want := RecordingKey(tc.task, tc.hash), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("RecordingKey(%q, %q) = %s, want %s", tc.task, tc.hash, got, want)
		}
	}
}
