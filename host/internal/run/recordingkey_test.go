package run

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
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

// TestRecordingKeys: the hash and key a call makes as one string are
// store.ChatKey's hash and RecordingKey's key.
func TestRecordingKeys(t *testing.T) {
	temp := 0.5
	var arena textArena
	var kept [][4]string
	for _, task := range []string{"01JABCDEFGHJKMNPQRSTVWXYZ0", "", strings.Repeat("t", 300)} {
		req := &sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: "hi " + task}}, Model: "m", Temperature: &temp}
		wantHash, wantCanon, err := store.ChatKey(nil, req)
		if err != nil {
			t.Fatal(err)
		}
		digest, canon, err := store.ChatKeyDigest(nil, nil, req)
		if err != nil || string(canon) != string(wantCanon) {
			t.Fatalf("ChatKeyDigest = %s, %v; want %s", canon, err, wantCanon)
		}
		// Into a used buffer with room, and one without.
		for _, dst := range [][]byte{make([]byte, 7, 4096), make([]byte, 3)} {
			d, c, err := store.ChatKeyDigest(dst, nil, req)
			if err != nil || d != digest || string(c) != string(wantCanon) {
				t.Fatalf("ChatKeyDigest into %d bytes of room = %s, %v", cap(dst), c, err)
			}
		}
		// A string of their own, and pieces of an arena that fills up
		// as the tasks go (its texts must stay as they were).
		for _, a := range []*textArena{nil, &arena} {
			hash, key := recordingKeys(task, digest, a)
			if hash != wantHash || key != RecordingKey(task, wantHash) {
				t.Errorf("recordingKeys(%q) = %s, %s; want %s, %s", task, hash, key, wantHash, RecordingKey(task, wantHash))
			}
			kept = append(kept, [4]string{hash, key, wantHash, RecordingKey(task, wantHash)})
		}
		b, start := arena.room(textArenaSize - 100)
		b.WriteString(strings.Repeat("x", textArenaSize-100))
		arena.done(start)
	}
	for _, k := range kept {
		if k[0] != k[2] || k[1] != k[3] {
			t.Errorf("a recording key changed as the arena filled: %s, %s; want %s, %s", k[0], k[1], k[2], k[3])
		}
	}
}
