package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestAsk: a writer serves the request kinds it registers on its socket;
// others are not served, and a store nobody holds serves nothing.
func TestAsk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := store.NewConfig().WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s, err := store.Open(ctx, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("echo", func(_ context.Context, body json.RawMessage) (any, error) {
		var in map[string]string
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		if in["say"] == "" {
			return nil, fmt.Errorf("say what: %w", store.ErrInvalid)
		}
		return map[string]string{"said": in["say"]}, nil
	})
	var out map[string]string
	if err := store.Ask(ctx, dir, "echo", map[string]string{"say": "hi"}, &out); err != nil || out["said"] != "hi" {
		t.Fatalf("echo: %v %v", out, err)
	}
	err = store.Ask(ctx, dir, "echo", map[string]string{}, nil)
	if !errors.Is(err, store.ErrInvalid) || err.Error() != "say what: invalid request" {
		t.Fatalf("invalid echo: %v", err)
	}
	if err := store.Ask(ctx, dir, "other", nil, nil); !errors.Is(err, store.ErrNotServed) {
		t.Fatalf("other: %v", err)
	}
	s.Handle("echo", nil)
	if err := store.Ask(ctx, dir, "echo", map[string]string{"say": "hi"}, nil); !errors.Is(err, store.ErrNotServed) {
		t.Fatalf("echo after Handle(nil): %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.Ask(ctx, dir, "echo", map[string]string{"say": "hi"}, nil); !errors.Is(err, store.ErrNotServed) {
		t.Fatalf("echo with no writer: %v", err)
	}
}
