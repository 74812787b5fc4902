package proxy

import (
	"bytes"
	"slices"
	"strings"
)

// scrubbed stands where a key the host holds was.
const scrubbed = "[REDACTED]"

// minSecret is the shortest value treated as a key: a shorter one would
// scrub ordinary words.
const minSecret = 8

// scrubber replaces the literal values of the keys the host holds (the
// upstreams' API keys, the server's token) in bytes an upstream sent,
// before they reach a client, the store or a log. An upstream that
// quotes the key it was sent in an error message must not hand it on.
type scrubber struct{ secrets [][]byte }

func newScrubber(secrets []string) *scrubber {
	s := &scrubber{}
	for _, v := range secrets {
		if len(v) >= minSecret && !slices.ContainsFunc(s.secrets, func(b []byte) bool { return string(b) == v }) {
			s.secrets = append(s.secrets, []byte(v))
		}
	}
	// The longest first: a key that holds another is replaced whole.
	slices.SortFunc(s.secrets, func(a, b []byte) int { return len(b) - len(a) })
	return s
}

// bytes returns b with every secret replaced; b itself when none occurs.
func (s *scrubber) bytes(b []byte) []byte {
	for _, k := range s.secrets {
		if bytes.Contains(b, k) {
			b = bytes.ReplaceAll(b, k, []byte(scrubbed))
		}
	}
	return b
}

// string is bytes for a string.
func (s *scrubber) string(v string) string {
	for _, k := range s.secrets {
		if strings.Contains(v, string(k)) {
			v = strings.ReplaceAll(v, string(k), scrubbed)
		}
	}
	return v
}
