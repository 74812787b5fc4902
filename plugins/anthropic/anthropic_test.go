package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/sextant-dev/sextant/plugins/internal/providertest"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/plugin"
	"github.com/sextant-dev/sextant/host/plugin/process"
	"github.com/sextant-dev/sextant/host/plugin/wasm"
	"github.com/sextant-dev/sextant/plugins/anthropic"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	providertest.Cleanup()
	os.Exit(code)
}

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

// TestChat runs the suite in-process: called directly, and through the
// wire encoding (sdktest.Wire), which is what the host's transports carry.
func TestChat(t *testing.T) {
	cs := cases(t)
	f := newFake(t, cs)
	direct := providertest.Run(t, "direct", spec, anthropic.New(), f, cs, false)
	providertest.SameOutcomes(t, direct, providertest.Run(t, "wire", spec, sdktest.Wire(anthropic.New()), f, cs, false))
}

// TestChatOverProcess runs the suite against the plugin built as a native
// binary and served over the process transport (go-plugin): same answers,
// same errors, byte for byte.
func TestChatOverProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	cs := cases(t)
	f := newFake(t, cs)
	direct := providertest.Run(t, "in-process", spec, anthropic.New(), f, cs, false)
	ctx := context.Background()
	p, err := process.Open(ctx, process.Config{Name: anthropic.Name, Command: []string{providertest.BuildPlugin(t, anthropic.Name, false)}})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, p)
	providertest.SameOutcomes(t, direct, providertest.Run(t, "process", spec, c, f, cs, false))
}

// TestChatOverWasm runs the suite against the plugin built as a wasip1
// module, whose only way out is the host's http function, granted the
// fake server's host:port (and the closed port the refusal case dials).
func TestChatOverWasm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	cs := cases(t)
	f := newFake(t, cs)
	direct := providertest.Run(t, "in-process", spec, anthropic.New(), f, cs, true)
	allow := []string{f.HostPort()}
	for _, c := range cs {
		if c.BaseURL != "" {
			u, _ := url.Parse(c.BaseFor(f, spec))
			allow = append(allow, u.Host)
		}
	}
	m, err := wasm.Open(context.Background(), wasm.Config{Name: anthropic.Name, Path: providertest.BuildPlugin(t, anthropic.Name, true), AllowHTTP: allow})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, m)
	providertest.SameOutcomes(t, direct, providertest.Run(t, "wasm", spec, c, f, cs, true))
}

// TestWasmRefusesUngrantedHost: with no allow_http grant the host refuses
// the request, the server never sees it, and the error names the
// host:port and says how to grant it.
func TestWasmRefusesUngrantedHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	cs := cases(t)[:1]
	f := newFake(t, cs)
	m, err := wasm.Open(context.Background(), wasm.Config{Name: anthropic.Name, Path: providertest.BuildPlugin(t, anthropic.Name, true)})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, m)
	base := f.URL + "/success"
	_, err = c.Chat(context.Background(), &sdk.ChatRequest{Model: model, Messages: msgs,
		Config: map[string]any{"base_url": base, "api_key": testKey}})
	want := `anthropic: http POST ` + base + `/v1/messages: host "` + f.HostPort() + `" not granted to plugin "anthropic" (grant it with [plugins.anthropic] allow_http)`
	var e *sdk.Error
	if !errors.As(err, &e) || e.Code != sdk.CodeAuth || e.Message != want {
		t.Fatalf("got %v\nwant auth error %q", err, want)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("the API key leaked into the error: %v", err)
	}
	if n := len(f.Received("success")); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
}

// TestSpentDeadline: a call whose deadline has passed fails at once with
// CodeTimeout and sends nothing.
func TestSpentDeadline(t *testing.T) {
	cs := cases(t)[:1]
	f := newFake(t, cs)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	base := f.URL + "/success"
	_, err := anthropic.New().Chat(ctx, &sdk.ChatRequest{Model: model, Messages: msgs, Config: map[string]any{"base_url": base, "api_key": testKey}})
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
	f := newFake(t, []chatCase{{Name: "slow", Serve: func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop: // the abandoned request runs on; end it before the server closes
		}
	}}})
	t.Cleanup(func() { close(stop) })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := anthropic.New().Chat(ctx, &sdk.ChatRequest{Model: model, Messages: msgs, Config: map[string]any{"base_url": f.URL + "/slow", "api_key": testKey}})
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
			_, err := anthropic.New().Chat(context.Background(), &sdk.ChatRequest{Model: model, Messages: msgs, Config: tc.cfg})
			if !errors.Is(err, sdk.ErrBadRequest) || err.Error() != tc.want {
				t.Fatalf("got %v\nwant bad_request %q", err, tc.want)
			}
		})
	}
}

func client(t *testing.T, conn plugin.Conn) *plugin.Client {
	t.Helper()
	ctx := context.Background()
	info, err := plugin.Describe(ctx, anthropic.Name, conn)
	if err != nil {
		conn.Close(ctx)
		t.Fatal(err)
	}
	info.APIs = nil // the wire versions the SDK's Serve adds (api 1 and 2)
	got, _ := json.Marshal(info)
	want, _ := json.Marshal(anthropic.New().Describe())
	if string(got) != string(want) {
		t.Errorf("describe over the transport:\n %s\nwant\n %s", got, want)
	}
	c := plugin.NewClient(anthropic.Name, conn, info)
	t.Cleanup(func() { c.Close(ctx) })
	return c
}
