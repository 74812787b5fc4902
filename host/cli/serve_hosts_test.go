package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/serve"
)

// TestServeAllowHostsFromConfig: serve answers to the names of
// serve.toml's allow_hosts and of --allow-host alike (the union), and
// still refuses any other name.
func TestServeAllowHostsFromConfig(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	st := filepath.Join(dir, ".sextant")
	cfg := filepath.Join(dir, "serve.toml")
	if err := os.WriteFile(cfg, []byte("allow_hosts = [\"File.Example.\"]\n\n[proxy]\nreplay = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &signalWriter{want: "listening on", ready: make(chan struct{})}
	var serveErr bytes.Buffer
	served := make(chan int, 1)
	go func() {
		served <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--store", st, "--config", cfg, "--allow-host", "flag.example"},
			strings.NewReader(""), stdout, &serveErr)
	}()
	select {
	case <-stdout.ready:
	case code := <-served:
		t.Fatalf("serve exited %d: %s %s", code, stdout.String(), serveErr.String())
	}
	defer func() {
		cancel()
		if code := <-served; code != 0 {
			t.Errorf("serve exit %d: %s", code, serveErr.String())
		}
	}()
	b, err := os.ReadFile(filepath.Join(st, serve.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var info serve.Info
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int{"file.example": 200, "flag.example": 200, "other.example": 403} {
		req, err := http.NewRequest("GET", info.URL+"/api/v1/tasks", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: status %d, want %d", host, resp.StatusCode, want)
		}
	}
}
