package openai_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/plugins/openai/openaitest"
	"github.com/sextant-dev/sextant/plugins/providertest"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

func TestContract(t *testing.T) {
	sdktest.Check(t, openai.New())
	info := openai.New().Describe()
	var names []string
	for _, f := range info.Config {
		names = append(names, f.Name)
	}
	want := []string{"base_url", "api_key_env", "organization", "project", "stream", "max_tokens_param"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("config fields %v, want %v", names, want)
	}
}

// TestChat runs the suite (openaitest.Cases) in-process: called directly,
// and through the wire encoding (sdktest.Wire), which is what the host's
// transports carry. host/internal/plugin/providertransport runs it over
// the process and wasm transports.
func TestChat(t *testing.T) {
	cs := openaitest.Cases(t)
	f := providertest.NewFake(t, cs)
	direct := providertest.Run(t, "direct", openaitest.Spec, openai.New(), f, cs, false)
	providertest.SameOutcomes(t, direct, providertest.Run(t, "wire", openaitest.Spec, sdktest.Wire(openai.New()), f, cs, false))
}

// TestSpentDeadline: a call whose deadline has passed fails at once with
// CodeTimeout and sends nothing.
func TestSpentDeadline(t *testing.T) {
	cs := openaitest.Cases(t)[:1]
	f := providertest.NewFake(t, cs)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	base := f.URL + "/success/v1"
	_, err := openai.New().Chat(ctx, &sdk.ChatRequest{Messages: openaitest.Msgs, Config: map[string]any{"base_url": base}})
	want := "openai: POST " + base + "/chat/completions: no response before the deadline"
	if !errors.Is(err, sdk.ErrTimeout) || err.Error() != want {
		t.Fatalf("got %v, want timeout %q", err, want)
	}
	if n := len(f.Received("success")); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
}

// TestCancel: cancelling the caller's context ends the call at once, even
// though the upstream has not answered.
func TestCancel(t *testing.T) {
	stop := make(chan struct{})
	f := providertest.NewFake(t, []providertest.Case{{Name: "slow", Serve: func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop: // the abandoned request runs on; end it before the server closes
		}
	}}})
	t.Cleanup(func() { close(stop) })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := openai.New().Chat(ctx, &sdk.ChatRequest{Messages: openaitest.Msgs, Config: map[string]any{"base_url": f.URL + "/slow/v1"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %s", d)
	}
}

// TestConfigErrors: bad settings are refused before anything is sent,
// naming the key and the value (never the key's value for api_key).
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"base_url not a URL", map[string]any{"base_url": "localhost:11434"}, `openai: config base_url "localhost:11434": want an http or https URL`},
		{"base_url scheme", map[string]any{"base_url": "ftp://example.com/v1"}, `openai: config base_url "ftp://example.com/v1": want an http or https URL`},
		{"base_url password hidden", map[string]any{"base_url": "ftp://u:hunter2@example.com"}, `openai: config base_url "ftp://u:xxxxx@example.com": want an http or https URL`},
		{"base_url type", map[string]any{"base_url": 8080.0}, `openai: config base_url: want a string, got float64 8080`},
		{"api_key type", map[string]any{"api_key": []any{openaitest.TestKey}}, `openai: config api_key: want a string, got []interface {}`},
		{"stream type", map[string]any{"stream": "true"}, `openai: config stream: want true or false, got string "true"`},
		{"max_tokens_param", map[string]any{"max_tokens_param": "max_output_tokens"}, `openai: config max_tokens_param "max_output_tokens": want max_tokens, max_completion_tokens or auto`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openai.New().Chat(context.Background(), &sdk.ChatRequest{Messages: openaitest.Msgs, Config: tc.cfg})
			if !errors.Is(err, sdk.ErrBadRequest) || err.Error() != tc.want {
				t.Fatalf("got %v\nwant bad_request %q", err, tc.want)
			}
		})
	}
}
