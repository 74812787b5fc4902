package serve

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"slices"
)

// sealLen is the length of a cursor's seal.
const sealLen = 16

// A Sealer seals the cursors a server gives (the task list's store
// cursor, a cluster's page token): the cursor is the token and its HMAC
// under a key made when the Sealer is, so that a cursor the server never
// gave, forged or damaged, is refused rather than position a list
// (RATIONALE "Why the task list's store cursor is sealed, not
// validated"). A cursor is good for the Sealer's life. base64url holds no
// '~': a sealed cursor never begins with clusterCursor.
type Sealer struct{ key [32]byte }

// NewSealer returns a Sealer with a random key.
func NewSealer() *Sealer {
	s := &Sealer{}
	_, _ = rand.Read(s.key[:]) // never fails (crypto/rand)
	return s
}

// Seal is the cursor for token; "" for none.
func (s *Sealer) Seal(token []byte) string {
	if len(token) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, s.key[:])
	m.Write(token)
	return base64.RawURLEncoding.EncodeToString(m.Sum(slices.Clip(token))[:len(token)+sealLen])
}

// Unseal is the token Seal sealed in cursor (nil for ""); ok is false for
// a cursor this Sealer did not make.
func (s *Sealer) Unseal(cursor string) (token []byte, ok bool) {
	if cursor == "" {
		return nil, true
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) <= sealLen {
		return nil, false
	}
	token = raw[:len(raw)-sealLen]
	m := hmac.New(sha256.New, s.key[:])
	m.Write(token)
	return token, hmac.Equal(m.Sum(nil)[:sealLen], raw[len(raw)-sealLen:])
}
