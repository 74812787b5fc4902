// Package dial connects a plugin registry to the transports that run
// plugins outside the host's own code: wasm modules (wazero, with a disk
// cache of compiled modules) and process plugins (go-plugin).
package dial

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/process"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
)

// CacheDir is where compiled wasm modules are kept across runs:
// $SEXTANT_CACHE/wasm, else the user cache directory's sextant/wasm ("":
// no disk cache).
func CacheDir() string {
	if d := os.Getenv("SEXTANT_CACHE"); d != "" {
		return filepath.Join(d, "wasm")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sextant", "wasm")
	}
	return ""
}

// Options returns the registry options that connect the wasm and process
// transports, each plugin held to its manifest's grant; their logs go to
// logger (nil: slog.Default()).
func Options(logger *slog.Logger) []plugin.Option {
	if logger == nil {
		logger = slog.Default()
	}
	cache := CacheDir()
	dialWasm := func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
		return wasm.Open(ctx, wasm.Config{
			Name: m.Name, Path: m.ArtifactPath(), SHA256: m.Artifact().SHA256, CacheDir: cache,
			MemoryLimit: g.Memory, CallTimeout: g.Timeout, Pool: g.Pool, AllowHTTP: g.AllowHTTP, Credentials: g.Credentials, Logger: logger,
		})
	}
	dialProcess := func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
		return process.Open(ctx, process.Config{
			Name: m.Name, Command: append([]string{m.ArtifactPath()}, m.Process.Args...), Dir: m.Dir(),
			SHA256: m.Artifact().SHA256, CallTimeout: g.Timeout, MemoryLimit: int64(g.Memory), Env: plugin.CredentialEnv(g.Credentials), Logger: logger,
		})
	}
	return []plugin.Option{plugin.WithDialer(plugin.TransportWasm, dialWasm), plugin.WithDialer(plugin.TransportProcess, dialProcess)}
}
