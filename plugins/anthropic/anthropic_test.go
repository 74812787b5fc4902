package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/plugins/anthropic"
	"github.com/sextant-dev/sextant/plugins/anthropic/anthropictest"
	"github.com/sextant-dev/sextant/plugins/providertest"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

func TestContract(t *testing.T) {
	sdktest.Check(t, anthropic.New())
	info := anthropic.New().Describe()
	var names []string
	for _, f := range info.Config {
		names = append(names, f.Name)
	}
	want := []string{"base_url", "api_key_env", "max_tokens", "json_prefill"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("config fields %v, want %v", names, want)
	}
}

// TestChat runs the suite (anthropictest.Cases) in-process: called directly,
// and through the wire encoding (sdktest.Wire), which is what the host's
// transports carry. host/internal/plugin/providertransport runs it over
// the process and wasm transports.
func TestChat(t *testing.T) {
	cs := anthropictest.Cases(t)
	f := providertest.NewFake(t, cs)
	direct := providertest.Run(t, "direct", anthropictest.Spec, anthropic.New(), f, cs, false)
	providertest.SameOutcomes(t, direct, providertest.Run(t, "wire", anthropictest.Spec, sdktest.Wire(anthropic.New()), f, cs, false))
}

// TestSpentDeadline: a call whose deadline has passed fails at once with
// CodeTimeout and sends nothing.
func TestSpentDeadline(t *testing.T) {
	cs := anthropictest.Cases(t)[:1]
	f := providertest.NewFake(t, cs)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	base := f.URL + "/success"
	_, err := anthropic.New().Chat(ctx, &sdk.ChatRequest{Model: anthropictest.Model, Messages: anthropictest.Msgs, Config: map[string]any{"base_url": base, "api_key": anthropictest.TestKey}})
	want := "anthropic: POST " + base + "/v1/messages: no response before the deadline"
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
	_, err := anthropic.New().Chat(ctx, &sdk.ChatRequest{Model: anthropictest.Model, Messages: anthropictest.Msgs, Config: map[string]any{"base_url": f.URL + "/slow", "api_key": anthropictest.TestKey}})
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
		{"base_url not a URL", map[string]any{"base_url": "api.anthropic.com"}, `anthropic: config base_url "api.anthropic.com": want an http or https URL`},
		{"base_url password hidden", map[string]any{"base_url": "ftp://u:hunter2@example.com"}, `anthropic: config base_url "ftp://u:xxxxx@example.com": want an http or https URL`},
		{"base_url type", map[string]any{"base_url": true}, `anthropic: config base_url: want a string, got bool true`},
		{"api_key type", map[string]any{"api_key": 42.0}, `anthropic: config api_key: want a string, got float64`},
		{"json_prefill type", map[string]any{"json_prefill": 1.0}, `anthropic: config json_prefill: want true or false, got float64 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := anthropic.New().Chat(context.Background(), &sdk.ChatRequest{Model: anthropictest.Model, Messages: anthropictest.Msgs, Config: tc.cfg})
			if !errors.Is(err, sdk.ErrBadRequest) || err.Error() != tc.want {
				t.Fatalf("got %v\nwant bad_request %q", err, tc.want)
			}
		})
	}
}
