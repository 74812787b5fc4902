package store

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestLogHandler: a registered key and a pattern's secret are taken out
// of the message, string, error and grouped attributes and attributes
// bound with With; numbers and the rest stay.
func TestLogHandler(t *testing.T) {
	const key = "log-KEY-7f3a9c1e"
	if !RegisterSecret(key) {
		t.Fatal("not registered")
	}
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(slog.NewTextHandler(&buf, nil), nil)).With("bound", "k="+key)
	log.Warn("provider failed with "+key,
		"err", errors.New(`401: invalid key `+key),
		"body", `{"error":"bad","password":"hunter2hunter2"}`,
		slog.Group("req", "auth", "Authorization: Bearer abcdefghijklmnop0123", "attempt", 3),
		"status", 401)
	out := buf.String()
	for _, leak := range []string{key, "hunter2hunter2", "abcdefghijklmnop0123"} {
		if strings.Contains(out, leak) {
			t.Fatalf("log holds %q:\n%s", leak, out)
		}
	}
	for _, keep := range []string{"provider failed with [REDACTED]", "req.attempt=3", "status=401", "401: invalid key [REDACTED]", `bound="k=[REDACTED]"`} {
		if !strings.Contains(out, keep) {
			t.Fatalf("log lacks %q:\n%s", keep, out)
		}
	}
}
