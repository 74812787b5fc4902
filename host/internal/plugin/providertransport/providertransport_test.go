// Package providertransport_test runs the first-party LLM providers'
// suites (plugins/openai/openaitest, plugins/anthropic/anthropictest) over
// the host's transports: each provider's plugin is built as a native binary
// served over the process transport and as a wasip1 module served over the
// wasm transport, and every case must come back as it does in process,
// byte for byte. The providers' own packages run the suites in process;
// they cannot import the host, whose packages are internal.
package providertransport_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/process"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/plugins/anthropic"
	"github.com/sextant-dev/sextant/plugins/anthropic/anthropictest"
	"github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/plugins/openai/openaitest"
	"github.com/sextant-dev/sextant/plugins/providertest"
	"github.com/sextant-dev/sextant/sdk"
)

func TestMain(m *testing.M) {
	code := m.Run()
	providertest.Cleanup()
	os.Exit(code)
}

// provider is one first-party provider and its suite.
type provider struct {
	name  string
	new   func() sdk.Provider
	pkg   string // the plugin main's import path
	spec  providertest.Spec
	cases func(*testing.T) []providertest.Case
	model string
	msgs  []sdk.Message
}

var providers = []provider{
	{
		name: openai.Name, new: func() sdk.Provider { return openai.New() }, pkg: openaitest.PluginPkg,
		spec: openaitest.Spec, cases: openaitest.Cases, model: "gpt-4o-mini", msgs: openaitest.Msgs,
	},
	{
		name: anthropic.Name, new: func() sdk.Provider { return anthropic.New() }, pkg: anthropictest.PluginPkg,
		spec: anthropictest.Spec, cases: anthropictest.Cases, model: anthropictest.Model, msgs: anthropictest.Msgs,
	},
}

// TestChatOverProcess runs each suite against the plugin built as a native
// binary and served over the process transport (go-plugin): same answers,
// same errors, byte for byte.
func TestChatOverProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	for _, pv := range providers {
		t.Run(pv.name, func(t *testing.T) {
			cs := pv.cases(t)
			f := providertest.NewFake(t, cs)
			direct := providertest.Run(t, "in-process", pv.spec, pv.new(), f, cs, false)
			ctx := context.Background()
			p, err := process.Open(ctx, process.Config{Name: pv.name, Command: []string{providertest.BuildPlugin(t, pv.name, pv.pkg, false)}})
			if err != nil {
				t.Fatal(err)
			}
			c := client(t, pv, p)
			providertest.SameOutcomes(t, direct, providertest.Run(t, "process", pv.spec, c, f, cs, false))
		})
	}
}

// TestChatOverWasm runs each suite against the plugin built as a wasip1
// module, whose only way out is the host's http function, granted the
// fake server's host:port (and the closed port the refusal case dials).
func TestChatOverWasm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	for _, pv := range providers {
		t.Run(pv.name, func(t *testing.T) {
			cs := pv.cases(t)
			f := providertest.NewFake(t, cs)
			direct := providertest.Run(t, "in-process", pv.spec, pv.new(), f, cs, true)
			allow := []string{f.HostPort()}
			for _, c := range cs {
				if c.BaseURL != "" {
					u, _ := url.Parse(c.BaseFor(f, pv.spec))
					allow = append(allow, u.Host)
				}
			}
			m, err := wasm.Open(context.Background(), wasm.Config{Name: pv.name, Path: providertest.BuildPlugin(t, pv.name, pv.pkg, true), AllowHTTP: allow})
			if err != nil {
				t.Fatal(err)
			}
			c := client(t, pv, m)
			providertest.SameOutcomes(t, direct, providertest.Run(t, "wasm", pv.spec, c, f, cs, true))
		})
	}
}

// TestWasmRefusesUngrantedHost: with no allow_http grant the host refuses
// the request, the server never sees it, and the error names the
// host:port and says how to grant it.
func TestWasmRefusesUngrantedHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	for _, pv := range providers {
		t.Run(pv.name, func(t *testing.T) {
			cs := pv.cases(t)[:1]
			f := providertest.NewFake(t, cs)
			m, err := wasm.Open(context.Background(), wasm.Config{Name: pv.name, Path: providertest.BuildPlugin(t, pv.name, pv.pkg, true)})
			if err != nil {
				t.Fatal(err)
			}
			c := client(t, pv, m)
			base := f.URL + "/success" + pv.spec.Suffix
			_, err = c.Chat(context.Background(), &sdk.ChatRequest{Model: pv.model, Messages: pv.msgs,
				Config: map[string]any{"base_url": base, "api_key": pv.spec.Key}})
			want := pv.name + `: http POST ` + f.URL + "/success" + pv.spec.Endpoint + `: host "` + f.HostPort() +
				`" not granted to plugin "` + pv.name + `" (grant it with [plugins.` + pv.name + `] allow_http)`
			var e *sdk.Error
			if !errors.As(err, &e) || e.Code != sdk.CodeAuth || e.Message != want {
				t.Fatalf("got %v\nwant auth error %q", err, want)
			}
			if strings.Contains(err.Error(), pv.spec.Key) {
				t.Errorf("the API key leaked into the error: %v", err)
			}
			if n := len(f.Received("success")); n != 0 {
				t.Errorf("server saw %d requests, want none", n)
			}
		})
	}
}

// client describes the plugin over conn, checks the description is the
// in-process one, and returns a client that closes when the test ends.
func client(t *testing.T, pv provider, conn plugin.Conn) *plugin.Client {
	t.Helper()
	ctx := context.Background()
	info, err := plugin.Describe(ctx, pv.name, conn)
	if err != nil {
		conn.Close(ctx)
		t.Fatal(err)
	}
	// Serve adds the wire versions (api 1 and 2) and the embed flag,
	// which must match what the provider's Go type can do.
	if _, embeds := pv.new().(sdk.Embedder); info.Embed != embeds {
		t.Errorf("describe over the transport: embed %v, in process an sdk.Embedder: %v", info.Embed, embeds)
	}
	info.APIs, info.Embed = nil, false
	got, _ := json.Marshal(info)
	want, _ := json.Marshal(pv.new().Describe())
	if string(got) != string(want) {
		t.Errorf("describe over the transport:\n %s\nwant\n %s", got, want)
	}
	c := plugin.NewClient(pv.name, conn, info)
	t.Cleanup(func() { c.Close(ctx) })
	return c
}
