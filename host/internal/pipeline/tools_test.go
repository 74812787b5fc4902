package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// toolsGood is good with two tool sources and a classify step that uses them.
var toolsGood = strings.Replace(good, `[steps.classify]
kind = "llm"
prompt = "Classify {{ .input.body }} {{ playbook }}"
output = "json"
`, `[tools.files]
command = "node"
args = ["server.js", "."]
env = ["NODE_ENV=production", "GITHUB_TOKEN"]
[tools.web]
url = "http://127.0.0.1:3001/mcp"
headers = { Authorization = "MCP_TOKEN" }
replay = "live"
idempotent = true
[steps.classify]
kind = "llm"
prompt = "Classify {{ .input.body }} {{ playbook }}"
output = "json"
tools = ["files.read_*", "web"]
tool_choice = "auto"
`, 1)

func TestLoadTools(t *testing.T) {
	p, err := Load(context.Background(), setup(t, toolsGood), staticResolver{}, Options{Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	f, w := p.Tools["files"], p.Tools["web"]
	if f.Transport() != ToolStdio || w.Transport() != ToolHTTP || f.Timeout.Std().String() != "30s" || f.MaxResult != "1MiB" {
		t.Fatalf("sources %+v %+v", f, w)
	}
	if w.Replay != ReplayLive || w.Idempotent == nil || !*w.Idempotent || f.Idempotent != nil || f.Confirm != nil {
		t.Fatalf("overrides %+v %+v", f, w)
	}
	st := p.Steps["classify"]
	if len(st.Tools) != 2 || st.ToolChoice != "auto" || st.MaxTurns != 8 {
		t.Fatalf("step %+v", st)
	}
}

func TestLoadToolsBad(t *testing.T) {
	for _, c := range []struct {
		name, from, to string
		want           []string
	}{
		{"two transports", `url = "http://127.0.0.1:3001/mcp"`, "url = \"http://127.0.0.1:3001/mcp\"\ncommand = \"x\"",
			[]string{`pipeline.toml:19: tools.web: want exactly one of command (stdio MCP server), url (streamable HTTP MCP server) or use (tool plugin)`}},
		{"key of another transport", `replay = "live"`, "replay = \"live\"\nargs = [\"x\"]",
			[]string{`pipeline.toml:23: tools.web.args: http sources do not take args (it is for stdio sources)`}},
		{"bad url", `url = "http://127.0.0.1:3001/mcp"`, `url = "ftp://x/mcp"`,
			[]string{`pipeline.toml:20: tools.web.url: "ftp://x/mcp" is not an http or https URL`}},
		{"secret in a header", `Authorization = "MCP_TOKEN"`, `Authorization = "Bearer abc"`,
			[]string{`pipeline.toml:21: tools.web.headers.Authorization: want the name of the environment variable holding the value, got "Bearer abc" (secrets never live in files)`}},
		{"bad env", `"GITHUB_TOKEN"]`, `"1X"]`,
			[]string{`pipeline.toml:18: tools.files.env[1]: "1X" is not NAME or NAME=value`}},
		{"bad replay", `replay = "live"`, `replay = "always"`,
			[]string{`pipeline.toml:22: tools.web.replay: "always" is not one of recorded, live`}},
		{"unknown source", `tools = ["files.read_*", "web"]`, `tools = ["file.read_*", "web"]`,
			[]string{`pipeline.toml:28: steps.classify.tools[0]: unknown tool source "file" (did you mean "files"?)`}},
		{"argument pattern in a step", `tools = ["files.read_*", "web"]`, `tools = ["files.read_*(path=/etc/*)"]`,
			[]string{`pipeline.toml:28: steps.classify.tools[0]: "files.read_*(path=/etc/*)": a step selects tools, not calls: argument patterns belong in a strategy's constraints`}},
		{"bad glob", `tools = ["files.read_*", "web"]`, `tools = ["files.read_["]`,
			[]string{`pipeline.toml:28: steps.classify.tools[0]: tool pattern "files.read_[": bad glob "read_["`}},
		{"max_turns without tools", `tools = ["files.read_*", "web"]
tool_choice = "auto"`, `max_turns = 3`,
			[]string{`pipeline.toml:28: steps.classify.max_turns: takes effect only with tools (the step offers none)`}},
		{"tool_choice no selector matches", "tools = [\"files.read_*\", \"web\"]\ntool_choice = \"auto\"",
			"tools = [\"files.read_*\", \"files.list_directory\"]\ntool_choice = \"list_directry\"",
			[]string{`pipeline.toml:29: steps.classify.tool_choice: "list_directry" is not a tool the step's tools select (files.read_*, files.list_directory) (did you mean "list_directory"?)`}},
		{"tool_choice matches a glob", "tools = [\"files.read_*\", \"web\"]\ntool_choice = \"auto\"",
			"tools = [\"files.read_*\"]\ntool_choice = \"read_text_file\"\nmax_turns = 0", // only the max_turns problem
			[]string{`pipeline.toml:30: steps.classify.max_turns: want an integer > 0, got 0`}},
		{"max_turns zero", `tool_choice = "auto"`, `max_turns = 0`,
			[]string{`pipeline.toml:29: steps.classify.max_turns: want an integer > 0, got 0`}},
		{"tools on an action step", `confidence = "vars.classify.confidence"`, "confidence = \"vars.classify.confidence\"\ntools = [\"web\"]",
			[]string{`pipeline.toml:34: steps.act.tools: action steps do not take tools`}},
		{"plugin of another kind", `command = "node"`, `use = "script"`,
			[]string{`pipeline.toml:17: tools.files.args: plugin sources do not take args (it is for stdio sources)`,
				`pipeline.toml:18: tools.files.env: plugin sources do not take env (it is for stdio sources)`,
				`pipeline.toml:16: tools.files.use: plugin "script" is a provider, not a tool`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(toolsGood, c.from) {
				t.Fatalf("fixture lacks %q", c.from)
			}
			_, err := Load(context.Background(), setup(t, strings.Replace(toolsGood, c.from, c.to, 1)), staticResolver{}, Options{Getenv: func(string) (string, bool) { return "", false }})
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Fatalf("err = %v, want invalid", err)
			}
			got := strings.Split(err.Error(), "\n")
			for _, w := range c.want {
				found := false
				for _, g := range got {
					found = found || strings.HasSuffix(g, w)
				}
				if !found {
					t.Errorf("missing %q in\n%s", w, err)
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("got %d problems, want %d:\n%s", len(got), len(c.want), err)
			}
		})
	}
}

// TestLoadToolData: a plugin source's data file must exist, its config is
// checked against the keys the plugin declares, and the keys the host
// fills from data cannot be set by hand.
func TestLoadToolData(t *testing.T) {
	src := strings.Replace(toolsGood, "[tools.files]\ncommand = \"node\"\nargs = [\"server.js\", \".\"]\nenv = [\"NODE_ENV=production\", \"GITHUB_TOKEN\"]\n",
		"[tools.files]\nuse = \"records\"\ndata = \"orders.toml\"\nconfig = { kinds = [\"refund\"] }\n", 1)
	if src == toolsGood {
		t.Fatal("fixture lacks the files source")
	}
	load := func(doc string, withData bool) error {
		path := setup(t, doc)
		if withData {
			if err := os.WriteFile(filepath.Join(filepath.Dir(path), "orders.toml"), []byte("[[record]]\nid = 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Load(context.Background(), path, staticResolver{}, Options{Getenv: func(string) (string, bool) { return "", false }})
		return err
	}
	if err := load(src, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, from, to string
		data           bool
		want           string
	}{
		{"no data file", "", "", false, `pipeline.toml:17: tools.files.data: orders.toml: no such file`},
		{"unknown config key", `kinds = ["refund"]`, `kindz = ["refund"]`, true, `pipeline.toml:18: tools.files.config.kindz: unknown key (did you mean "kinds"?)`},
		{"config.data by hand", `kinds = ["refund"]`, `kinds = ["refund"], data = "x"`, true, `tools.files.config.data: is set by the host from data: rename it`},
		{"data on a stdio source", `url = "http://127.0.0.1:3001/mcp"`, "url = \"http://127.0.0.1:3001/mcp\"\ndata = \"orders.toml\"", true, `tools.web.data: http sources do not take data (it is for plugin sources)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := load(strings.Replace(src, c.from, c.to, 1), c.data)
			if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
