package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/tool"
	"github.com/sextant-dev/sextant/host/internal/tool/mcptest"
	"github.com/sextant-dev/sextant/sdk"
)

// filesSet is a Set with the npm filesystem server over stdio, serving dir.
func filesSet(t testing.TB, dir string, mod func(*pipeline.ToolSource)) *tool.Set {
	t.Helper()
	src := pipeline.ToolSource{Command: "node", Args: []string{mcptest.Filesystem(t), dir},
		Timeout: pipeline.Duration(20 * time.Second), MaxResult: "1MiB"}
	if mod != nil {
		mod(&src)
	}
	s := tool.NewSet(&pipeline.Pipeline{Dir: dir, Tools: map[string]pipeline.ToolSource{"files": src}}, tool.Options{})
	t.Cleanup(func() { s.Close() })
	return s
}

func spec(t *testing.T, specs []sdk.ToolSpec, name string) sdk.ToolSpec {
	t.Helper()
	for _, s := range specs {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no tool %q among %d", name, len(specs))
	return sdk.ToolSpec{}
}

// TestStdioFilesystem drives the reference filesystem server over stdio:
// its tools and annotations are listed, calls write and read a real file,
// bad arguments are refused before the call, a tool's own failure is a
// result with IsError.
func TestStdioFilesystem(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	s := filesSet(t, dir, nil)
	ctx := context.Background()
	if err := s.Start(ctx, "files"); err != nil {
		t.Fatal(err)
	}
	specs, err := s.List(ctx, "files")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := s.Config("files")
	read, write, mkdir := spec(t, specs, "read_text_file"), spec(t, specs, "write_file"), spec(t, specs, "create_directory")
	if p := tool.PolicyOf(cfg, read); p != (tool.Policy{ReplayLive: true, Idempotent: true}) {
		t.Errorf("read_text_file policy %+v", p)
	}
	if p := tool.PolicyOf(cfg, write); p != (tool.Policy{Idempotent: true, Confirm: true}) {
		t.Errorf("write_file policy %+v", p)
	}
	if p := tool.PolicyOf(cfg, mkdir); p != (tool.Policy{Idempotent: true}) {
		t.Errorf("create_directory policy %+v", p)
	}
	f := filepath.Join(dir, "note.txt")
	args, _ := json.Marshal(map[string]string{"path": f, "content": "hello from sextant"})
	res, err := s.Call(ctx, "files", "write_file", args)
	if err != nil || res.IsError {
		t.Fatalf("write_file: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(f); string(b) != "hello from sextant" {
		t.Fatalf("file holds %q", b)
	}
	args, _ = json.Marshal(map[string]string{"path": f})
	res, err = s.Call(ctx, "files", "read_text_file", args)
	if err != nil || res.IsError || res.Content != "hello from sextant" {
		t.Fatalf("read_text_file: %+v %v", res, err)
	}
	// The tool's own failure is a result the model is shown.
	args, _ = json.Marshal(map[string]string{"path": filepath.Join(dir, "missing.txt")})
	res, err = s.Call(ctx, "files", "read_text_file", args)
	if err != nil || !res.IsError || !strings.Contains(res.Content, "missing.txt") {
		t.Fatalf("missing file: %+v %v", res, err)
	}
	// Arguments are checked against the schema before any call.
	for _, c := range []struct{ args, want string }{
		{`{}`, "path"},
		{`{"path": 3}`, "path"},
		{`[1]`, "want a JSON object"},
		{`{"path":`, "not JSON"},
	} {
		err := s.Check(ctx, "files", "read_text_file", json.RawMessage(c.args))
		if !errors.Is(err, tool.ErrBadArguments) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%s) = %v, want ErrBadArguments mentioning %q", c.args, err, c.want)
		}
	}
	if err := s.Check(ctx, "files", "read_text_file", args); err != nil {
		t.Errorf("good arguments refused: %v", err)
	}
}

// TestResultLimit: a result over max_result fails the call.
func TestResultLimit(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	f := filepath.Join(dir, "big.txt")
	os.WriteFile(f, []byte(strings.Repeat("x", 4096)), 0o644)
	s := filesSet(t, dir, func(c *pipeline.ToolSource) { c.MaxResult = "1KiB" })
	args, _ := json.Marshal(map[string]string{"path": f})
	_, err := s.Call(context.Background(), "files", "read_text_file", args)
	if !errors.Is(err, tool.ErrTooLarge) || !strings.HasPrefix(err.Error(), "tools.files: read_text_file: result over max_result: ") || !strings.HasSuffix(err.Error(), " bytes, max_result 1024") {
		t.Fatalf("err = %v", err)
	}
}

// stderrLines is a slog handler that passes on each stderr line a tool
// server wrote, as the Set logs it.
type stderrLines chan string

func (stderrLines) Enabled(context.Context, slog.Level) bool { return true }
func (h stderrLines) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h stderrLines) WithGroup(string) slog.Handler          { return h }
func (h stderrLines) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "tool server stderr" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "line" {
				select {
				case h <- a.Value.String():
				default: // a full channel must not stall the server's stderr
				}
			}
			return true
		})
	}
	return nil
}

// TestCallErrorStderr: a call that fails is not blamed on what the server
// wrote to stderr before the call began — here the everything server's
// startup banner, written (and logged) before the call. Before, every
// failed call ended "(server stderr: Starting default (STDIO) server...)".
func TestCallErrorStderr(t *testing.T) {
	entry := filepath.Join(mcptest.Dir(t), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	lines := make(stderrLines, 64)
	s := tool.NewSet(&pipeline.Pipeline{Dir: t.TempDir(), Tools: map[string]pipeline.ToolSource{"every": {Command: "node", Args: []string{entry, "stdio"},
		Timeout: pipeline.Duration(20 * time.Second)}}}, tool.Options{Logger: slog.New(lines)})
	t.Cleanup(func() { s.Close() })
	if err := s.Start(context.Background(), "every"); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		if strings.Contains(l, "Starting default (STDIO) server") {
			break
		}
	}
	// The call's context ends (as its timeout would) while the operation
	// it started goes on for an hour.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Call(ctx, "every", "trigger-long-running-operation", json.RawMessage(`{"duration": 3600, "steps": 1}`))
	if err == nil || !strings.HasPrefix(err.Error(), "tools.every: trigger-long-running-operation: ") || strings.Contains(err.Error(), "server stderr") {
		t.Fatalf("call error: %v", err)
	}
}

// TestBrokenServers: a server that dies, one that writes garbage and one
// that never answers each fail with an error naming the source, within
// the source's timeout.
func TestBrokenServers(t *testing.T) {
	mcptest.Dir(t) // node is needed
	for _, c := range []struct {
		name, script, want string
	}{
		{"dies", `console.error("no config here"); process.exit(3)`, "no config here"},
		{"garbage", `process.stdout.write("this is not json-rpc\n"); setInterval(() => {}, 1000)`, "tools.broken: start:"},
		{"silent", `setInterval(() => {}, 1000)`, "tools.broken: start:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := pipeline.ToolSource{Command: "node", Args: []string{"-e", c.script}, Timeout: pipeline.Duration(2 * time.Second)}
			s := tool.NewSet(&pipeline.Pipeline{Dir: t.TempDir(), Tools: map[string]pipeline.ToolSource{"broken": src}}, tool.Options{})
			defer s.Close()
			err := s.Start(context.Background(), "broken")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
			if _, err2 := s.Call(context.Background(), "broken", "x", nil); err2 == nil {
				t.Fatal("a call to a source that did not start succeeded")
			}
		})
	}
}

// TestServerDiesMidRun: a call after the server died fails with an
// error naming the source; it does not hang.
func TestServerDiesMidRun(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	pidFile := filepath.Join(dir, "pid")
	s := filesSet(t, dir, func(c *pipeline.ToolSource) {
		// sh writes its pid, then becomes the server (exec keeps the pid).
		c.Command, c.Args = "sh", []string{"-c", `echo $$ > "$0"; exec node "$1" "$2"`, pidFile, mcptest.Filesystem(t), dir}
		c.Timeout = pipeline.Duration(5 * time.Second)
	})
	ctx := context.Background()
	if err := s.Start(ctx, "files"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := os.FindProcess(pid)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Call(ctx, "files", "list_allowed_directories", json.RawMessage(`{}`))
	if err == nil || !strings.HasPrefix(err.Error(), "tools.files: list_allowed_directories: ") {
		t.Fatalf("call to a dead server: %v", err)
	}
}

// TestStreamableHTTP drives the everything server over streamable HTTP,
// with a header taken from the environment.
func TestStreamableHTTP(t *testing.T) {
	url := mcptest.Everything(t)
	env := map[string]string{"EVERYTHING_TOKEN": "Bearer t0k3n"}
	s := tool.NewSet(&pipeline.Pipeline{Dir: t.TempDir(), Tools: map[string]pipeline.ToolSource{"every": {URL: url,
		Headers: map[string]string{"Authorization": "EVERYTHING_TOKEN"}, Timeout: pipeline.Duration(20 * time.Second)}}},
		tool.Options{Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	defer s.Close()
	ctx := context.Background()
	specs, err := s.List(ctx, "every")
	if err != nil {
		t.Fatal(err)
	}
	sum := spec(t, specs, "get-sum")
	if a := sum.Annotations; a == nil || a.ReadOnly == nil || !*a.ReadOnly {
		t.Errorf("get-sum annotations %+v", a)
	}
	res, err := s.Call(ctx, "every", "get-sum", json.RawMessage(`{"a": 2, "b": 40}`))
	if err != nil || res.IsError || !strings.Contains(res.Content, "42") {
		t.Fatalf("get-sum: %+v %v", res, err)
	}
	if err := s.Check(ctx, "every", "get-sum", json.RawMessage(`{"a": "two", "b": 40}`)); !errors.Is(err, tool.ErrBadArguments) {
		t.Errorf("Check(a: string) = %v", err)
	}
	// A header whose variable is unset stops the source at start.
	s2 := tool.NewSet(&pipeline.Pipeline{Tools: map[string]pipeline.ToolSource{"every": {URL: url,
		Headers: map[string]string{"Authorization": "NOT_SET_ANYWHERE"}}}}, tool.Options{Getenv: func(string) (string, bool) { return "", false }})
	if err := s2.Start(ctx, "every"); err == nil || err.Error() != "tools.every.headers.Authorization: environment variable NOT_SET_ANYWHERE is not set" || !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, `{}`},
		{`{"b": 1, "a": {"d": [2, 1], "c": "x<y"}}`, `{"a":{"c":"x<y","d":[2,1]},"b":1}`},
		{`{"n": 1.50}`, `{"n":1.50}`},
	} {
		got, err := tool.Canonical(json.RawMessage(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := tool.Canonical(json.RawMessage(`{} {}`)); err == nil {
		t.Error("two values accepted")
	}
}

func TestPolicyOverrides(t *testing.T) {
	yes, no := true, false
	destructive := sdk.ToolSpec{Name: "pay", Annotations: &sdk.ToolAnnotations{ReadOnly: &no, Destructive: &yes}}
	if p := tool.PolicyOf(pipeline.ToolSource{}, destructive); p != (tool.Policy{Confirm: true}) {
		t.Errorf("destructive %+v", p)
	}
	if p := tool.PolicyOf(pipeline.ToolSource{Confirm: &no, Idempotent: &yes, Replay: "live"}, destructive); p != (tool.Policy{ReplayLive: true, Idempotent: true}) {
		t.Errorf("overridden %+v", p)
	}
	if p := tool.PolicyOf(pipeline.ToolSource{}, sdk.ToolSpec{Name: "plain"}); p != (tool.Policy{}) {
		t.Errorf("no annotations %+v", p)
	}
}

// TestDuplicateToolNames: a server that lists one tool name twice cannot
// start: the model would see two tools of one name (providers refuse the
// request, or it calls one of them not knowing which), and a call by that
// name reaches whichever the server picks.
func TestDuplicateToolNames(t *testing.T) {
	mcptest.Dir(t) // node is needed
	const server = `require("readline").createInterface({input: process.stdin}).on("line", (line) => {
  const m = JSON.parse(line);
  const answer = (result) => process.stdout.write(JSON.stringify({jsonrpc: "2.0", id: m.id, result}) + "\n");
  if (m.method === "initialize") answer({protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: "twice", version: "1"}});
  else if (m.method === "tools/list") answer({tools: [{name: "get", inputSchema: {type: "object"}}, {name: "put", inputSchema: {type: "object"}}, {name: "get", description: "the other get", inputSchema: {type: "object"}}]});
  else if (m.id !== undefined) answer({});
});`
	src := pipeline.ToolSource{Command: "node", Args: []string{"-e", server}, Timeout: pipeline.Duration(5 * time.Second)}
	s := tool.NewSet(&pipeline.Pipeline{Dir: t.TempDir(), Tools: map[string]pipeline.ToolSource{"twice": src}}, tool.Options{})
	defer s.Close()
	err := s.Start(context.Background(), "twice")
	if err == nil || err.Error() != `tools.twice: list tools: the source lists tool "get" twice` {
		t.Fatalf("err = %v", err)
	}
}
