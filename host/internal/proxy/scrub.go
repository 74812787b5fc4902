package proxy

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
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

// scrubHandler is a slog.Handler that scrubs the host's keys from every
// message and attribute before its inner handler sees them: the provider
// chain logs upstream errors, which may quote the key.
type scrubHandler struct {
	inner slog.Handler
	s     *scrubber
}

func newScrubLogger(l *slog.Logger, s *scrubber) *slog.Logger {
	if len(s.secrets) == 0 {
		return l
	}
	return slog.New(&scrubHandler{inner: l.Handler(), s: s})
}

func (h *scrubHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.string(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *scrubHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.s.string(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]any, len(as))
		for i, x := range as {
			out[i] = h.attr(x)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		return slog.String(a.Key, h.s.string(fmt.Sprint(v.Any())))
	}
	return a
}

func (h *scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return &scrubHandler{inner: h.inner.WithAttrs(out), s: h.s}
}

func (h *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{inner: h.inner.WithGroup(name), s: h.s}
}
