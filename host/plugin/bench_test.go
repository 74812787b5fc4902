package plugin_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/plugin"
	"github.com/sextant-dev/sextant/host/plugin/process"
	"github.com/sextant-dev/sextant/host/plugin/wasm"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/testdata/plugins/echo-provider/echo"
)

const echoPkg = "testdata/plugins/echo-provider"

func TestMain(m *testing.M) {
	// Plugin lifecycle logs would interleave with benchmark result lines.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	code := m.Run()
	plugintest.Cleanup()
	if sharedCache != "" {
		os.RemoveAll(sharedCache)
	}
	os.Exit(code)
}

// kib is a 1 KiB chat request; the echo provider answers with the same
// 1 KiB, so each call carries 1 KiB each way.
var kib = &sdk.ChatRequest{Model: "echo", Messages: []sdk.Message{{Role: "user", Content: strings.Repeat("sextant ", 128)}}}

func openWasm(tb testing.TB, cache string) *plugin.Client {
	tb.Helper()
	ctx := context.Background()
	m, err := wasm.Open(ctx, wasm.Config{Name: "echo-provider", Path: plugintest.Wasm(tb, echoPkg), CacheDir: cache})
	if err != nil {
		tb.Fatal(err)
	}
	info, err := plugin.Describe(ctx, "echo-provider", m)
	if err != nil {
		tb.Fatal(err)
	}
	return plugin.NewClient("echo-provider", m, info)
}

func openProcess(tb testing.TB) *plugin.Client {
	tb.Helper()
	ctx := context.Background()
	p, err := process.Open(ctx, process.Config{Name: "echo-provider", Command: []string{plugintest.Native(tb, echoPkg)}})
	if err != nil {
		tb.Fatal(err)
	}
	info, err := plugin.Describe(ctx, "echo-provider", p)
	if err != nil {
		tb.Fatal(err)
	}
	return plugin.NewClient("echo-provider", p, info)
}

// TestTransportsAgree is the parity check behind the benchmark: the same
// provider gives the same answer linked in, as wasm and as a process.
func TestTransportsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	ctx := context.Background()
	want, err := echo.Echo{}.Chat(ctx, kib)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*plugin.Client{"wasm": openWasm(t, ""), "process": openProcess(t)} {
		got, err := c.Chat(ctx, kib)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if *got != *want {
			t.Fatalf("%s: %+v, want %+v", name, got, want)
		}
		c.Close(ctx)
	}
}

func BenchmarkPluginCall(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, p sdk.Provider) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			resp, err := p.Chat(ctx, kib)
			if err != nil || len(resp.Text) != 1024 {
				b.Fatalf("chat: %v (%d bytes)", err, len(resp.Text))
			}
		}
	}
	b.Run("builtin", func(b *testing.B) { run(b, echo.Echo{}) })
	b.Run("wasm", func(b *testing.B) {
		c := openWasm(b, b.TempDir())
		defer c.Close(ctx)
		run(b, c)
	})
	b.Run("process", func(b *testing.B) {
		c := openProcess(b)
		defer c.Close(ctx)
		run(b, c)
	})
}

func BenchmarkPluginLoad(b *testing.B) {
	ctx := context.Background()
	path := plugintest.Wasm(b, echoPkg)
	native := plugintest.Native(b, echoPkg)
	load := func(b *testing.B, open func() (plugin.Conn, error)) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			conn, err := open()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := plugin.Describe(ctx, "echo-provider", conn); err != nil {
				b.Fatal(err)
			}
			conn.Close(ctx)
		}
	}
	b.Run("wasm-cold", func(b *testing.B) {
		load(b, func() (plugin.Conn, error) {
			return wasm.Open(ctx, wasm.Config{Name: "echo-provider", Path: path})
		})
	})
	b.Run("wasm-cached", func(b *testing.B) {
		cache := b.TempDir()
		warm, err := wasm.Open(ctx, wasm.Config{Name: "echo-provider", Path: path, CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		warm.Close(ctx)
		b.ResetTimer()
		load(b, func() (plugin.Conn, error) {
			return wasm.Open(ctx, wasm.Config{Name: "echo-provider", Path: path, CacheDir: cache})
		})
	})
	b.Run("process", func(b *testing.B) {
		load(b, func() (plugin.Conn, error) {
			return process.Open(ctx, process.Config{Name: "echo-provider", Command: []string{native}})
		})
	})
	// Pinned: the binary is hashed and executed from the verified bytes.
	b.Run("process-pinned", func(b *testing.B) {
		sum := plugintest.SHA256(b, native)
		load(b, func() (plugin.Conn, error) {
			return process.Open(ctx, process.Config{Name: "echo-provider", Command: []string{native}, SHA256: sum})
		})
	})
}
