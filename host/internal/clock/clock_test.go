package clock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFileClock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "clock")
	if err := os.WriteFile(p, []byte("2026-01-01T09:00:00Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Env, p)
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Now(); !got.Equal(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("now %v", got)
	}
	if err := c.Sleep(context.Background(), 90*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := c.Now(); !got.Equal(time.Date(2026, 1, 1, 9, 1, 30, 0, time.UTC)) {
		t.Fatalf("after sleeping 90s: now %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); err == nil {
		t.Fatal("a cancelled sleep succeeded")
	}

	if err := os.WriteFile(p, []byte("tomorrow"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "want an RFC 3339 time") {
		t.Fatalf("bad clock file: err %v", err)
	}
	t.Setenv(Env, "")
	if c, err := FromEnv(); err != nil || c != (Real{}) {
		t.Fatalf("unset: %v %v, want the wall clock", c, err)
	}
}
