package pipeline

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

// ToolSource is one [tools.NAME] block: where an llm step's tools come
// from. Exactly one of Command (an MCP server over stdio), URL (an MCP
// server over streamable HTTP) and Use (a tool plugin) is set.
type ToolSource struct {
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env lists what the server's environment holds besides PATH, HOME
	// and the locale: NAME (passed from sextant's environment) or
	// NAME=value.
	Env []string `json:"env,omitempty"`
	Dir string   `json:"dir,omitempty"`
	URL string   `json:"url,omitempty"`
	// Headers maps an HTTP header to the environment variable holding
	// its value: secrets never live in files.
	Headers map[string]string `json:"headers,omitempty"`
	Use     string            `json:"use,omitempty"`
	Config  map[string]any    `json:"config,omitempty"`
	// Data is a file, relative to the pipeline, whose text the host sends
	// a tool plugin in its config (sdk.ToolConfigData), so that a plugin
	// without a filesystem (wasm) can serve a table or a document.
	Data    string   `json:"data,omitempty"`
	Timeout Duration `json:"timeout,omitempty"`
	// MaxResult is the largest result a call may return ("1MiB").
	MaxResult string `json:"max_result,omitempty"`
	// Replay, Idempotent and Confirm override what the tools' own
	// annotations imply (see docs/reference/tools.md); nil or "" keeps it.
	Replay     string `json:"replay,omitempty"`
	Idempotent *bool  `json:"idempotent,omitempty"`
	Confirm    *bool  `json:"confirm,omitempty"`
}

// The tool source transports.
const (
	ToolStdio  = "stdio"
	ToolHTTP   = "http"
	ToolPlugin = "plugin"
)

// Transport says how the source is reached: ToolStdio, ToolHTTP or
// ToolPlugin.
func (t ToolSource) Transport() string {
	switch {
	case t.URL != "":
		return ToolHTTP
	case t.Use != "":
		return ToolPlugin
	}
	return ToolStdio
}

// Replay values of a tool source.
const (
	ReplayRecorded = "recorded" // replay answers from recordings only
	ReplayLive     = "live"     // on_miss = live may execute the tool
)

// ToolChoices are the tool_choice values other than a tool's name.
var ToolChoices = []string{"auto", "none", "required"}

var toolBlock = &schema.Block{Name: "tool source", Fields: []schema.Field{
	{Name: "command", Type: schema.String, Doc: "stdio MCP server: the command to start (looked up in PATH)"},
	{Name: "args", Type: schema.StringList, Doc: "stdio: the command's arguments"},
	{Name: "env", Type: schema.StringList, Doc: "stdio: NAME (passed from sextant's environment) or NAME=value; the server gets these, PATH, HOME and the locale, nothing else"},
	{Name: "dir", Type: schema.String, Doc: "stdio: working directory, relative to the pipeline (default: the pipeline's folder)"},
	{Name: "url", Type: schema.String, Doc: "streamable HTTP MCP server: its endpoint URL"},
	{Name: "headers", Type: schema.StringMap, Doc: "http: header name = environment variable holding its value (e.g. Authorization = \"MCP_TOKEN\")"},
	{Name: "use", Type: schema.String, Doc: "tool plugin name (kind tool)"},
	{Name: "config", Type: schema.Table, Block: &schema.Block{Open: true}, Doc: "plugin: settings sent with every call"},
	{Name: "data", Type: schema.String, Doc: "plugin: a file, relative to the pipeline, whose text is sent with every call in config.data (its name in config.data_file): a table or document the plugin serves, also from a wasm sandbox"},
	{Name: "timeout", Type: schema.Duration, Default: "30s", Bound: schema.Positive, Doc: "per-call deadline (also for starting the source and listing its tools)"},
	{Name: "max_result", Type: schema.Size, Default: "1MiB", Doc: "largest result a call may return; a larger one fails the call"},
	{Name: "replay", Type: schema.String, Enum: []string{ReplayRecorded, ReplayLive}, Doc: "live: a replay with on_miss = live may execute these tools on a miss (default: live for tools annotated readOnlyHint, else recorded)"},
	{Name: "idempotent", Type: schema.Bool, Doc: "a call that started but has no recording when a run crashed is run again on resume (default: the tool's readOnlyHint or idempotentHint; otherwise the run waits for a person)"},
	{Name: "confirm", Type: schema.Bool, Doc: "ask a person before every call (default: for tools annotated destructiveHint)"},
}}

// toolFields lists the keys each transport takes besides the common ones.
var toolFields = map[string][]string{
	ToolStdio:  {"command", "args", "env", "dir"},
	ToolHTTP:   {"url", "headers"},
	ToolPlugin: {"use", "config", "data"},
}

var (
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sourceNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	headerRE     = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// tools checks the [tools] blocks.
func (l *loader) tools(p *Pipeline) {
	raws, _ := l.raw["tools"].(map[string]any)
	for _, name := range sortedKeys(p.Tools) {
		src := p.Tools[name]
		at := func(k ...string) []string { return append([]string{"tools", name}, k...) }
		if !sourceNameRE.MatchString(name) {
			l.add(at(), "source name %q may hold only letters, digits, _ and - (steps select its tools as %s.TOOL)", name, name)
		}
		set := 0
		for _, k := range []string{"command", "url", "use"} {
			if _, ok := raws[name].(map[string]any)[k]; ok {
				set++
			}
		}
		if set != 1 {
			l.add(at(), "want exactly one of command (stdio MCP server), url (streamable HTTP MCP server) or use (tool plugin)")
			continue
		}
		tr := src.Transport()
		raw, _ := raws[name].(map[string]any)
		for _, k := range sortedKeys(raw) {
			for other, keys := range toolFields {
				if other != tr && contains(keys, k) {
					l.add(at(k), "%s sources do not take %s (it is for %s sources)", tr, k, other)
				}
			}
		}
		switch tr {
		case ToolStdio:
			if strings.TrimSpace(src.Command) == "" {
				l.add(at("command"), "empty command")
			}
			for i, e := range src.Env {
				k, _, _ := strings.Cut(e, "=")
				if !envNameRE.MatchString(k) {
					l.add(at("env", strconv.Itoa(i)), "%q is not NAME or NAME=value", e)
				}
			}
			if src.Dir != "" {
				l.fileExists(p, src.Dir, "tools", name, "dir")
			}
		case ToolHTTP:
			u, err := url.Parse(src.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				l.add(at("url"), "%q is not an http or https URL", src.URL)
			}
			for _, h := range sortedKeys(src.Headers) {
				if !headerRE.MatchString(h) {
					l.add(at("headers", h), "%q is not a header name", h)
				}
				if !envNameRE.MatchString(src.Headers[h]) {
					l.add(at("headers", h), "want the name of the environment variable holding the value, got %q (secrets never live in files)", src.Headers[h])
				}
			}
		case ToolPlugin:
			if l.plugin(src.Use, sdk.KindTool, "tools", name, "use") {
				l.pluginConfig(src.Use, src.Config, at("config")...)
			}
			if src.Data != "" {
				l.fileExists(p, src.Data, at("data")...)
				for _, k := range []string{sdk.ToolConfigData, sdk.ToolConfigDataFile} {
					if _, ok := src.Config[k]; ok {
						l.add(at("config", k), "is set by the host from data: rename it")
					}
				}
			}
		}
	}
}

// stepTools checks an llm step's tools, tool_choice and max_turns.
func (l *loader) stepTools(p *Pipeline, id string, s Step, raw map[string]any) {
	if len(s.Tools) == 0 {
		for _, k := range []string{"tool_choice", "max_turns"} {
			if _, ok := raw[k]; ok {
				l.add([]string{"steps", id, k}, "takes effect only with tools (the step offers none)")
			}
		}
		return
	}
	var pats []strategy.ToolPattern // the selectors that parsed
	for i, sel := range s.Tools {
		at := []string{"steps", id, "tools", strconv.Itoa(i)}
		pat, err := strategy.ParseToolPattern(sel)
		switch {
		case err != nil:
			l.add(at, "%v", err)
		case len(pat.Args) > 0:
			l.add(at, "%q: a step selects tools, not calls: argument patterns belong in a strategy's constraints", sel)
		default:
			pats = append(pats, pat)
			if _, ok := p.Tools[pat.Source]; !ok {
				l.add(at, "unknown tool source %q%s", pat.Source, suggest.Hint(pat.Source, sortedKeys(p.Tools)))
			}
		}
	}
	c := s.ToolChoice
	if c == "" || contains(ToolChoices, c) {
		return
	}
	if !sourceNameRE.MatchString(c) {
		l.add([]string{"steps", id, "tool_choice"}, "%q is not auto, none, required or a tool name", c)
		return
	}
	// The sources' tools are known only when the run starts them, but a
	// name no selector can match is never offered, whatever they hold.
	if len(pats) < len(s.Tools) {
		return // a bad selector is reported already
	}
	var exact []string
	for _, pat := range pats {
		if pat.MatchTool(pat.Source, c) {
			return
		}
		if pat.Tool != "" && !strings.ContainsAny(pat.Tool, "*?[\\") {
			exact = append(exact, pat.Tool)
		}
	}
	l.add([]string{"steps", id, "tool_choice"}, "%q is not a tool the step's tools select (%s)%s", c, strings.Join(s.Tools, ", "), suggest.Hint(c, exact))
}
