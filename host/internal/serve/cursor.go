package serve

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// cursorSealLen is the length of a store cursor's seal.
const cursorSealLen = 16

// sealCursor is the cursor GET /api/v1/tasks gives for the store's
// cursor c: c and its HMAC under this server's key, so that a cursor this
// server never gave, forged or damaged, is refused rather than position
// the list (RATIONALE "Why the task list's store cursor is sealed, not
// validated"). "" for none. base64url holds no '~': it never begins
// with clusterCursor.
func (s *Server) sealCursor(c string) string {
	if c == "" {
		return ""
	}
	m := hmac.New(sha256.New, s.cursorKey[:])
	m.Write([]byte(c))
	return base64.RawURLEncoding.EncodeToString(m.Sum([]byte(c))[:len(c)+cursorSealLen])
}

// unsealCursor is the store's cursor that sealCursor sealed in cursor;
// ok is false for a cursor this server did not give.
func (s *Server) unsealCursor(cursor string) (c string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) <= cursorSealLen {
		return "", false
	}
	token := raw[:len(raw)-cursorSealLen]
	m := hmac.New(sha256.New, s.cursorKey[:])
	m.Write(token)
	return string(token), hmac.Equal(m.Sum(nil)[:cursorSealLen], raw[len(raw)-cursorSealLen:])
}
