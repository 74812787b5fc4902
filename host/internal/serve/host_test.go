package serve_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

func TestCheckLimitFlags(t *testing.T) {
	def := serve.Limits{ReadTimeout: serve.DefaultReadTimeout, WriteTimeout: serve.DefaultWriteTimeout, IdleTimeout: serve.DefaultIdleTimeout,
		MaxConns: serve.DefaultMaxConns, MaxConnsPerIP: serve.DefaultMaxConnsPerIP, MaxRuns: serve.DefaultMaxRuns}
	if err := serve.CheckLimitFlags(def); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for flag, change := range map[string]func(*serve.Limits){
		"--read-timeout 0s":     func(l *serve.Limits) { l.ReadTimeout = 0 },
		"--write-timeout -1s":   func(l *serve.Limits) { l.WriteTimeout = -1e9 },
		"--idle-timeout 0s":     func(l *serve.Limits) { l.IdleTimeout = 0 },
		"--max-conns 1":         func(l *serve.Limits) { l.MaxConns = 1 },
		"--max-conns-per-ip 0:": func(l *serve.Limits) { l.MaxConnsPerIP = 0 },
		"--max-runs 0":          func(l *serve.Limits) { l.MaxRuns = 0 },
	} {
		l := def
		change(&l)
		if err := serve.CheckLimitFlags(l); err == nil || !strings.HasPrefix(err.Error(), strings.TrimSuffix(flag, ":")) {
			t.Errorf("%s: %v", flag, err)
		}
	}
}

const routeBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
  <process id="r" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="x"/>
    <scriptTask id="x"/>
    <sequenceFlow id="f2" sourceRef="x" targetRef="end"/>
    <endEvent id="end"/>
  </process>
</definitions>
`

// writePipeline writes a pipeline named name, whose [store] dir is
// storeDir ("" = the default), as dir/name/pipeline.toml.
func writePipeline(t *testing.T, dir, name, storeDir string) {
	t.Helper()
	body := "name = \"" + name + "\"\n[routine]\nnavigator = \"bpmn\"\nfile = \"r.bpmn\"\n[steps.x]\nkind = \"expr\"\nset = { y = \"1\" }\n"
	if storeDir != "" {
		body += "[store]\ndir = \"" + storeDir + "\"\n"
	}
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name, "pipeline.toml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name, "r.bpmn"), []byte(routeBPMN), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPipelinesStore: serve holds the one store its pipelines write to;
// pipelines that write to several leave it at ./.sextant with a note
// naming them, and files that are not pipelines are named and skipped.
func TestPipelinesStore(t *testing.T) {
	t.Chdir(t.TempDir())
	cwd := project.StoreLoc{Dir: ".sextant", From: project.FromCwd}
	if l, notes, err := serve.PipelinesStore(""); l != cwd || notes != nil || err != nil {
		t.Fatalf("no --pipelines: %+v %q %v", l, notes, err)
	}
	writePipeline(t, "pipes", "a", "../../state")
	writePipeline(t, "pipes", "b", "../../state")
	if err := os.WriteFile(filepath.Join("pipes", "serve.toml"), []byte("allow_hosts = [\"x.example\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, notes, err := serve.PipelinesStore("pipes")
	if err != nil || l != (project.StoreLoc{Dir: "state", From: project.FromPipeline}) {
		t.Fatalf("one store: %+v %v", l, err)
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "--pipelines: "+filepath.Join("pipes", "serve.toml")+": ") {
		t.Fatalf("the skipped file's note: %q", notes)
	}
	writePipeline(t, "pipes", "c", "")
	l, notes, err = serve.PipelinesStore("pipes")
	if err != nil || l != cwd {
		t.Fatalf("two stores: %+v %v", l, err)
	}
	want := "the pipelines under pipes write to 2 stores (" + filepath.Join("pipes", "c", ".sextant") + ", state); serving ./.sextant"
	if len(notes) != 2 || !strings.HasPrefix(notes[1], want) {
		t.Fatalf("two stores' note: %q, want it to start %q", notes, want)
	}
	if _, _, err := serve.PipelinesStore("absent"); err == nil {
		t.Fatal("a missing --pipelines directory: no error")
	}
}

// TestNewWithExtras: the server mounts the OTLP receiver and the sink
// routes beside its API and takes allow_hosts from the configuration; a
// configuration with problems is invalid input.
func TestNewWithExtras(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), ".sextant"), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	config := filepath.Join(dir, "serve.toml")
	if err := os.WriteFile(config, []byte("allow_hosts = [\"sextant.example\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	x := serve.Extras{Config: config, Registry: plugin.NewRegistry(entries, plugin.WithLogger(quiet()))}
	srv, closeExtras, err := serve.NewWithExtras(ctx, serve.Options{Store: st, Addr: "127.0.0.1:0", Logger: quiet()}, x)
	if err != nil {
		t.Fatal(err)
	}
	defer closeExtras(ctx)
	for _, c := range []struct {
		method, path, host string
		want               int
	}{
		{"POST", "/v1/traces", "sextant.example", http.StatusUnsupportedMediaType},
		{"GET", "/api/v1/tasks", "sextant.example", http.StatusOK},
		{"GET", "/api/v1/tasks", "evil.example", http.StatusForbidden},
	} {
		r := httptest.NewRequest(c.method, c.path, strings.NewReader("x"))
		r.Host = c.host
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s %s (Host %s): %d, want %d: %s", c.method, c.path, c.host, w.Code, c.want, w.Body)
		}
	}

	if err := os.WriteFile(config, []byte("allow_hosts = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = serve.NewWithExtras(ctx, serve.Options{Store: st, Addr: "127.0.0.1:0", Logger: quiet()}, x)
	var ie *serve.InvalidError
	if !errors.As(err, &ie) || !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "serve.toml:1") {
		t.Fatalf("a bad configuration: %v, want a positioned *serve.InvalidError", err)
	}
}
