//go:build unix

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/tool/mcptest"
)

// The agent pipeline of TestToolsMCP: one llm step on the script provider
// that reads a file and makes a folder with the npm filesystem MCP server
// (stdio), then answers with what it read. The server's stdin passes
// through tee into mcp.log, so the test counts every tools/call that
// reached the server. Calls run one at a time (limits.parallel = 1) so a
// failpoint's pass is one exact call.
const toolsPipeline = `name = "fs-agent"
[routine]
navigator = "chain"
file = "chain.toml"
[providers.default]
use = "script"
rules = "responses.toml"
[tools.files]
command = "sh"
args = ["-c", 'tee -a "$0" | exec node "$1" "$2"', "${MCP_LOG}", "${FS_SERVER}", "${FS_ROOT}"]
EXTRA
[steps.agent]
kind = "llm"
prompt = "What does {{ .input.dir }}/hello.txt say?"
tools = ["files.read_text_file", "files.create_directory"]
[limits]
parallel = 1
`

const toolsRules = `[[rule]]
step = "agent"
when = 'rounds == 0'
[[rule.tool_calls]]
name = "read_text_file"
arguments = '{"path": "{{ .input.dir }}/hello.txt"}'
[[rule.tool_calls]]
name = "create_directory"
arguments = '{"path": "{{ .input.dir }}/out"}'

[[rule]]
step = "agent"
reply = 'The file says: {{ (index .results 0).content }}'
`

const toolsChain = `name = "fs-agent"
inputs = ["dir"]
[[steps]]
id = "agent"
inputs = ["dir"]
outputs = ["answer"]
`

// TestToolsMCP runs an agent whose tools are a real MCP server from npm:
// the run completes live; its self-replay, with the server absent, is at
// 100% fidelity and starts no server; a run killed (SIGKILL, by a
// failpoint) after a recorded tool call does not call it again on resume;
// a run killed after a non-idempotent call started waits for a person.
func TestToolsMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sextant; runs node")
	}
	server := mcptest.Filesystem(t)
	bin := plugintest.Native(t, "cmd/sextant")
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	root := filepath.Join(dir, "data")
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "pipeline.toml"), strings.Replace(toolsPipeline, "EXTRA", "", 1))
	write(filepath.Join(dir, "fragile.toml"), strings.Replace(toolsPipeline, "EXTRA", "idempotent = false", 1))
	write(filepath.Join(dir, "responses.toml"), toolsRules)
	write(filepath.Join(dir, "chain.toml"), toolsChain)
	for _, task := range []string{"t1", "t2", "t3"} {
		write(filepath.Join(root, task, "hello.txt"), "hello from "+task)
	}
	mcpLog := filepath.Join(dir, "mcp.log")
	env := append(scrubbedEnv(), "SEXTANT_STORE="+filepath.Join(dir, "store"), "XDG_DATA_HOME="+dir,
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "SEXTANT_CACHE="+filepath.Join(dir, "cache", "sextant"),
		"MCP_LOG="+mcpLog, "FS_SERVER="+server, "FS_ROOT="+root)
	sextant := func(extraEnv []string, args ...string) (string, int) {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Dir, c.Env = dir, append(append([]string(nil), env...), extraEnv...)
		out, err := c.CombinedOutput()
		code := 0
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("sextant %v: %v", args, err)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = -int(ws.Signal())
			} else {
				code = ee.ExitCode()
			}
		}
		return string(out), code
	}
	// calls counts the tools/call requests that reached the server for
	// a path containing what.
	calls := func(what string) int {
		b, _ := os.ReadFile(mcpLog)
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"method":"tools/call"`) && strings.Contains(line, what) {
				n++
			}
		}
		return n
	}

	// Live: completes, both calls reach the server once.
	out, code := sextant(nil, "run", "pipeline.toml", "--id", "t1", "--set", "dir="+filepath.Join(root, "t1"), "--json")
	if code != 0 || !strings.Contains(out, `"answer": "The file says: hello from t1"`) {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if calls("t1/hello.txt") != 1 || calls("t1/out") != 1 {
		t.Fatalf("server saw %d reads, %d mkdirs", calls("t1/hello.txt"), calls("t1/out"))
	}
	if info, err := os.Stat(filepath.Join(root, "t1", "out")); err != nil || !info.IsDir() {
		t.Fatalf("the tool did not make the folder: %v", err)
	}
	out, _ = sextant(nil, "show", "t1")
	for _, w := range []string{"execute_tool read_text_file", "execute_tool create_directory"} {
		if !strings.Contains(out, w) {
			t.Errorf("show lacks %q:\n%s", w, out)
		}
	}

	// Crash after the first call is recorded: resume serves it from its
	// recording and runs only the second.
	out, code = sextant([]string{"SEXTANT_FAILPOINT=run.tool.recorded:1"}, "run", "pipeline.toml", "--id", "t2", "--set", "dir="+filepath.Join(root, "t2"))
	if code != -int(syscall.SIGKILL) {
		t.Fatalf("the failpoint did not kill the run: exit %d\n%s", code, out)
	}
	if calls("t2/hello.txt") != 1 || calls("t2/out") != 0 {
		t.Fatalf("before resume the server saw %d reads, %d mkdirs", calls("t2/hello.txt"), calls("t2/out"))
	}
	if out, code = sextant(nil, "resume", "t2"); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	if calls("t2/hello.txt") != 1 || calls("t2/out") != 1 {
		t.Fatalf("after resume the server saw %d reads (want 1: recorded before the kill), %d mkdirs", calls("t2/hello.txt"), calls("t2/out"))
	}

	// Crash after a call's started marker, before the call, with the
	// source marked not idempotent: resume waits for a person and shows
	// the call; approve=yes runs it once.
	out, code = sextant([]string{"SEXTANT_FAILPOINT=run.tool.started:1"}, "run", "fragile.toml", "--id", "t3", "--set", "dir="+filepath.Join(root, "t3"))
	if code != -int(syscall.SIGKILL) || calls("t3/") != 0 {
		t.Fatalf("the failpoint did not kill the run before the call: exit %d, %d calls\n%s", code, calls("t3/"), out)
	}
	// show --full names the interrupted call and the tools listed.
	out, _ = sextant(nil, "show", "t3", "--full")
	for _, w := range []string{"\ntool recordings:\n", "  tools of files: ", "read_text_file",
		`  started: files.read_text_file({"path":"` + filepath.Join(root, "t3") + `/hello.txt"}) — no result was recorded: the run stopped during the call`} {
		if !strings.Contains(out, w) {
			t.Errorf("show --full lacks %q:\n%s", w, out)
		}
	}
	out, code = sextant(nil, "resume", "t3")
	if code != 3 || !strings.Contains(out, `tool call files.read_text_file({"path":"`+filepath.Join(root, "t3")+`/hello.txt"}) started before the run stopped and has no result; it is not idempotent`) {
		t.Fatalf("resume: exit %d, want 3 showing the call\n%s", code, out)
	}
	if calls("t3/") != 0 {
		t.Fatal("the interrupted call was run again unasked")
	}
	if out, code = sextant(nil, "resume", "t3", "--set", "approve=yes"); code != 0 {
		t.Fatalf("resume --set approve=yes: exit %d\n%s", code, out)
	}
	if calls("t3/hello.txt") != 1 || calls("t3/out") != 1 {
		t.Fatalf("after approval the server saw %d reads, %d mkdirs", calls("t3/hello.txt"), calls("t3/out"))
	}

	// Self-replay with the server absent: FS_SERVER names no file and
	// node is off PATH. Every task reproduces; mcp.log does not grow.
	before, _ := os.ReadFile(mcpLog)
	out, code = sextant([]string{"FS_SERVER=" + filepath.Join(dir, "no-such-server.js"), "PATH=/nonexistent"}, "replay", "pipeline.toml")
	if code != 0 || !strings.Contains(out, "3 replayed, fidelity 100.0%") {
		t.Fatalf("replay: exit %d\n%s", code, out)
	}
	if after, _ := os.ReadFile(mcpLog); len(after) != len(before) {
		t.Fatalf("the replay reached the MCP server (%d bytes logged)", len(after)-len(before))
	}
}
