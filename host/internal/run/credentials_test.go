package run_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// keyProvider is a builtin provider that remembers the Config of every
// call. With credentials set it declares sdk.Info.Credentials (it takes
// its key by reference); without, it is an api 1 plugin built before
// credentials existed.
type keyProvider struct {
	name        string
	credentials bool

	mu      sync.Mutex
	configs []map[string]any
}

func (k *keyProvider) Describe() sdk.Info {
	return sdk.Info{Name: k.name, Kind: sdk.KindProvider, Version: "1.0.0", API: sdk.APIVersion, Credentials: k.credentials}
}

func (k *keyProvider) Chat(_ context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.configs = append(k.configs, r.Config)
	return &sdk.ChatResponse{Text: "ok"}, nil
}

// onePipeline writes a one-step chain pipeline whose default provider
// uses the plugin use, with api_key_env = env and the lines block, followed
// by the extra TOML lines extra, and returns its path.
func onePipeline(t *testing.T, use, env, block, extra string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"pipeline.toml": `name = "one"
[routine]
navigator = "chain"
file = "chain.toml"
[strategy]
file = "strategy.toml"
[providers.default]
use = "` + use + `"
api_key_env = "` + env + `"
retries = 3
` + block + `
[steps.ask]
kind = "llm"
prompt = "hello {{ .input.topic }}"
` + extra,
		"chain.toml": `name = "one"
inputs = ["topic"]
[[steps]]
id = "ask"
inputs = ["topic"]
outputs = ["answer"]
`,
		"strategy.toml": `[metadata]
name = "one"
version = "1.0.0"
created_at = 2026-01-01T00:00:00Z
[parameters]
user_confirmation = 0.5
[evolution]
max_parameter_delta = 0.1
branch_type = "experimental"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "pipeline.toml")
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// registryWith resolves the linked-in builtins plus extra.
func registryWith(t *testing.T, extra ...sdk.Plugin) *plugin.Registry {
	t.Helper()
	entries, err := plugin.Discover(nil, append(sdk.Registered(), extra...))
	if err != nil {
		t.Fatal(err)
	}
	return plugin.NewRegistry(entries)
}

func ask(t *testing.T, prep *run.Prepared) (*sdk.ChatResponse, error) {
	t.Helper()
	resp, _, _, err := prep.Providers.Chat(t.Context(), "default", &sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: "hello"}}})
	return resp, err
}

// TestCredentialsBoundOnce checks that a provider that takes credentials
// by reference never receives the API key in a call, only its name, while
// an api 1 plugin that predates credentials still gets the key.
func TestCredentialsBoundOnce(t *testing.T) {
	const env, key = "SEXTANT_TEST_BOUND_KEY", "sk-test-bound-0123456789abcdef"
	t.Setenv(env, key)
	for _, tc := range []struct {
		credentials bool
		want        map[string]any
	}{
		{true, map[string]any{sdk.ConfigAPIKeyCredential: env}},
		{false, map[string]any{sdk.ConfigAPIKey: key}},
	} {
		kp := &keyProvider{name: "key-provider", credentials: tc.credentials}
		prep, err := run.Prepare(t.Context(), onePipeline(t, kp.name, env, "", ""), registryWith(t, kp), quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		defer prep.Close(context.Background())
		for range 2 {
			if _, err := ask(t, prep); err != nil {
				t.Fatal(err)
			}
		}
		if len(kp.configs) != 2 {
			t.Fatalf("credentials=%v: %d calls reached the plugin, want 2", tc.credentials, len(kp.configs))
		}
		for i, cfg := range kp.configs {
			if len(cfg) != len(tc.want) || cfg[sdk.ConfigAPIKeyCredential] != tc.want[sdk.ConfigAPIKeyCredential] ||
				cfg[sdk.ConfigAPIKey] != tc.want[sdk.ConfigAPIKey] {
				t.Errorf("credentials=%v: call %d config = %v, want %v", tc.credentials, i, cfg, tc.want)
			}
		}
		// What the host keeps and hashes never holds the key.
		if p, _ := prep.Providers.Get("default"); p.Config[sdk.ConfigAPIKey] != nil {
			t.Errorf("Provider.Config holds the key: %v", p.Config)
		}
	}
}

// TestPrepareWithoutCredentials checks that a replay needs no API key: an
// unset api_key_env stops a run at once, naming the provider block and the
// variable, but not a replay, whose providers a call reaches only on a
// miss with on_miss = "live" — and then fails naming the variable.
func TestPrepareWithoutCredentials(t *testing.T) {
	const env = "SEXTANT_TEST_UNSET_KEY"
	t.Setenv(env, "")
	kp := &keyProvider{name: "key-provider", credentials: true}
	path := onePipeline(t, kp.name, env, "", "")
	reg := registryWith(t, kp)

	_, err := run.Prepare(t.Context(), path, reg, quietLogger())
	const want = `pipeline.toml: providers.default.api_key_env: environment variable SEXTANT_TEST_UNSET_KEY is not set`
	if err == nil || err.Error() != want || !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("Prepare = %v, want %q (invalid)", err, want)
	}

	prep, err := run.Prepare(t.Context(), path, reg, quietLogger(), run.WithoutCredentials())
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(context.Background())
	_, err = ask(t, prep)
	const live = `provider "default" (plugin "key-provider"): refused the credentials after 1 attempt: ` +
		`providers.default.api_key_env: environment variable SEXTANT_TEST_UNSET_KEY is not set`
	if err == nil || err.Error() != live {
		t.Errorf("live call = %v, want %q", err, live)
	}
	if len(kp.configs) != 0 {
		t.Errorf("the plugin was called %d times without its key", len(kp.configs))
	}
}
