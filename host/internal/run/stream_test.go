package run

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// streamingFake streams "a", "b", "c"; call n follows script[n] (the last
// entry repeats): failAt < 0 answers, failAt = k fails with err after k
// deltas.
type streamingFake struct {
	fakeProvider
	failAt []int
	err    error
	config []map[string]any
}

func (f *streamingFake) ChatStream(ctx context.Context, r *sdk.ChatRequest, onDelta func(string) error) (*sdk.ChatResponse, error) {
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, *r)
	f.config = append(f.config, r.Config)
	f.mu.Unlock()
	at := f.failAt[min(n, len(f.failAt)-1)]
	var text strings.Builder
	for i, d := range []string{"a", "b", "c"} {
		if i == at {
			return nil, f.err
		}
		if err := onDelta(d); err != nil {
			return nil, err
		}
		text.WriteString(d)
	}
	return &sdk.ChatResponse{Text: text.String(), Usage: sdk.Usage{InputTokens: 1, OutputTokens: 3}}, nil
}

func streamChat(h *harness, name string) ([]string, *sdk.ChatResponse, string, []Attempt, error) {
	var deltas []string
	resp, who, attempts, err := h.ChatStream(context.Background(), name, &sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: "hi"}}},
		func(d string) error { deltas = append(deltas, d); return nil })
	return deltas, resp, who, attempts, err
}

// TestProviderStreamRetriesBeforeFirstDelta: a failure before any delta
// is retried as Chat's would be; the answer's deltas reach the caller
// once, and the assembled answer is returned.
func TestProviderStreamRetriesBeforeFirstDelta(t *testing.T) {
	f := &streamingFake{fakeProvider: fakeProvider{name: "s"}, failAt: []int{0, -1}, err: unavailable}
	h := newHarness(&Provider{Name: "default", Plugin: f, Retries: 2})
	deltas, resp, who, attempts, err := streamChat(h, "default")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(deltas, []string{"a", "b", "c"}) || resp.Text != "abc" || who != "default" || len(attempts) != 2 {
		t.Fatalf("deltas %q, answer %+v from %q after %d attempts", deltas, resp, who, len(attempts))
	}
}

// TestProviderStreamNoRetryAfterFirstDelta: once a delta was handed on,
// a failure is neither retried nor falls back; it is a
// *StreamBrokenError that still matches the provider's error.
func TestProviderStreamNoRetryAfterFirstDelta(t *testing.T) {
	f := &streamingFake{fakeProvider: fakeProvider{name: "s"}, failAt: []int{2}, err: unavailable}
	backup := &fakeProvider{name: "backup"}
	h := newHarness(&Provider{Name: "default", Plugin: f, Retries: 3, Fallback: []string{"backup"}},
		&Provider{Name: "backup", Plugin: backup})
	deltas, resp, _, attempts, err := streamChat(h, "default")
	var broken *StreamBrokenError
	if !errors.As(err, &broken) || !errors.Is(err, sdk.ErrUnavailable) || resp != nil {
		t.Fatalf("err %v (%T), answer %+v; want a StreamBrokenError wrapping unavailable", err, err, resp)
	}
	if !reflect.DeepEqual(deltas, []string{"a", "b"}) || len(attempts) != 1 || backup.count() != 0 || len(h.sleeps) != 0 {
		t.Fatalf("deltas %q, %d attempts, backup calls %d, sleeps %v; want a b, 1, 0, none", deltas, len(attempts), backup.count(), h.sleeps)
	}
}

// TestProviderStreamFallsBackToChat: a provider that does not stream
// (a plugin across the process or wasm boundary) answers through Chat,
// its whole text one delta; a streaming one behind boundProvider gets
// the block's configuration.
func TestProviderStreamFallsBackToChat(t *testing.T) {
	plain := &fakeProvider{name: "plain"}
	h := newHarness(&Provider{Name: "default", Plugin: plain})
	deltas, resp, _, _, err := streamChat(h, "default")
	if err != nil || !reflect.DeepEqual(deltas, []string{"answer from plain"}) || resp.Text != "answer from plain" {
		t.Fatalf("deltas %q, answer %+v, err %v", deltas, resp, err)
	}

	f := &streamingFake{fakeProvider: fakeProvider{name: "s"}, failAt: []int{-1}}
	bound := bindProvider("default", f, map[string]any{"base_url": "http://x"}, "KEY_ENV", "secret")
	h = newHarness(&Provider{Name: "default", Plugin: bound})
	deltas, _, _, _, err = streamChat(h, "default")
	if err != nil || len(deltas) != 3 {
		t.Fatalf("bound: deltas %q, err %v; want 3 deltas", deltas, err)
	}
	if got := f.config[0]; got["base_url"] != "http://x" || got[sdk.ConfigAPIKey] != "secret" {
		t.Errorf("config %v: want the block's, with its key", got)
	}
}
