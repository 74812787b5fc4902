package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// ManifestFile is the name of a plugin's manifest inside its folder.
const ManifestFile = "plugin.toml"

// ManifestSpec is the declaration of plugin.toml: ParseManifest checks a
// manifest with it (unknown keys, types, allowed values), and the
// reference page and JSON Schema are generated from it. What a
// declaration cannot say (one transport, a semantic version, an artifact
// inside the folder) ParseManifest checks after.
var ManifestSpec = &schema.Block{Name: "plugin manifest", Fields: []schema.Field{
	{Name: "name", Type: schema.String, Required: true, Doc: "the plugin's unique name: lowercase words joined by - or _"},
	{Name: "kind", Type: schema.String, Required: true, Enum: []string{string(sdk.KindNavigator), string(sdk.KindProvider), string(sdk.KindGate), string(sdk.KindTool)}, Doc: "what the plugin is"},
	{Name: "version", Type: schema.String, Required: true, Doc: "the plugin's semantic version, e.g. 1.2.3"},
	{Name: "api", Type: schema.Int, Required: true, Doc: fmt.Sprintf("the plugin protocol version it speaks (this host speaks %d)", sdk.APIVersion)},
	{Name: "description", Type: schema.String, Doc: "one line for `sextant plugins list`"},
	{Name: "wasm", Type: schema.Table, Doc: "a WebAssembly plugin (exactly one of [wasm] and [process])", Block: &schema.Block{Fields: []schema.Field{
		{Name: "file", Type: schema.String, Doc: "the .wasm module, relative to the plugin folder and inside it (required in [wasm])"},
		{Name: "sha256", Type: schema.String, Doc: "hex sha256 of the file; set, a changed file is refused"},
	}}},
	{Name: "process", Type: schema.Table, Doc: "a plugin run as a subprocess (exactly one of [wasm] and [process])", Block: &schema.Block{Fields: []schema.Field{
		{Name: "command", Type: schema.String, Doc: "the executable, relative to the plugin folder (required in [process])"},
		{Name: "args", Type: schema.StringList, Doc: "extra arguments for the executable"},
		{Name: "sha256", Type: schema.String, Doc: "hex sha256 of the executable; set, a changed file is refused"},
		{Name: "allow_outside", Type: schema.Bool, Default: false, Doc: "let command name a program outside the plugin folder (an absolute path, .., a symlink out)"},
	}}},
	{Name: "requests", Type: schema.Table, Doc: "capabilities the plugin asks for; a pipeline's [plugins.NAME] must grant them", Block: &schema.Block{Fields: []schema.Field{
		{Name: "http", Type: schema.StringList, Doc: "host or host:port the plugin calls (*.example.com for subdomains)"},
		{Name: "memory", Type: schema.Size, Doc: "memory it needs, e.g. 64MiB"},
	}}},
}}

// Manifest is a decoded plugin.toml.
type Manifest struct {
	Name        string    `toml:"name"`
	Kind        sdk.Kind  `toml:"kind"`
	Version     string    `toml:"version"`
	API         int       `toml:"api"`
	Description string    `toml:"description"`
	Wasm        *Artifact `toml:"wasm"`
	Process     *Artifact `toml:"process"`
	Requests    Requests  `toml:"requests"`

	// Path is the manifest file the entry was read from.
	Path string `toml:"-"`
}

// Artifact is the [wasm] or [process] section: the file to load and its pinned checksum.
type Artifact struct {
	// File is the .wasm module ([wasm]).
	File string `toml:"file"`
	// Command is the executable ([process]), relative to the plugin folder.
	Command string `toml:"command"`
	// Args are extra arguments for the executable ([process]).
	Args []string `toml:"args"`
	// SHA256 is the hex sha256 of File or Command; empty means unpinned.
	SHA256 string `toml:"sha256"`
	// AllowOutside lets Command name a program outside the plugin folder
	// (an absolute path, a path through "..", or a symlink out of the
	// folder) ([process]). Without it such a command is refused: a plugin
	// folder must not be able to run, or make the host read, an arbitrary
	// file.
	AllowOutside bool `toml:"allow_outside"`
}

// Requests are the capabilities a plugin asks for; a pipeline must grant them.
type Requests struct {
	HTTP   []string `toml:"http"`
	Memory string   `toml:"memory"`
}

// Dir is the plugin's folder.
func (m *Manifest) Dir() string { return filepath.Dir(m.Path) }

// Transport is "wasm" or "process".
func (m *Manifest) Transport() string {
	if m.Wasm != nil {
		return TransportWasm
	}
	return TransportProcess
}

// Artifact returns the section that names the plugin's executable code.
func (m *Manifest) Artifact() *Artifact {
	if m.Wasm != nil {
		return m.Wasm
	}
	return m.Process
}

// ArtifactPath is the absolute path of the .wasm file or executable.
func (m *Manifest) ArtifactPath() string {
	a := m.Artifact()
	f := a.File
	if m.Process != nil {
		f = a.Command
	}
	if !filepath.IsAbs(f) {
		f = filepath.Join(m.Dir(), filepath.FromSlash(f))
	}
	if abs, err := filepath.Abs(f); err == nil {
		return abs
	}
	return f
}

// MemoryLimit returns the requested memory in bytes, or 0 when not set.
func (m *Manifest) MemoryLimit() uint64 {
	n, _ := ParseSize(m.Requests.Memory)
	return n
}

// The transports.
const (
	TransportBuiltin = "builtin"
	TransportWasm    = "wasm"
	TransportProcess = "process"
)

var (
	semverRE    = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	sha256RE    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	decodeErrRE = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)
	hostRE      = regexp.MustCompile(`^(\*\.)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?$`)
)

// ReadManifest reads and validates the manifest at path. Every problem is
// reported, each as `path:line: key: message`; the error matches
// sdk.ErrInvalid.
func ReadManifest(path string) (*Manifest, error) {
	data, err := readfile.Prefix(path, tomlpos.MaxSize+1)
	if err != nil {
		return nil, sdk.Invalid(sdk.Problem{File: path, Message: fmt.Sprintf("read manifest: %v", errors.Unwrap(err))})
	}
	return ParseManifest(path, data)
}

// ParseManifest decodes and validates manifest data read from path.
func ParseManifest(path string, data []byte) (*Manifest, error) {
	var m Manifest
	m.Path = path
	ix, err := tomlpos.Scan(path, data)
	if err != nil {
		return nil, err
	}
	md, err := toml.Decode(string(data), &m)
	if err != nil {
		return nil, sdk.Invalid(tomlProblem(path, err))
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, sdk.Invalid(tomlProblem(path, err))
	}
	var probs []sdk.Problem
	add := func(key, format string, args ...any) {
		probs = append(probs, sdk.Problem{File: path, Line: ix.Line(strings.Split(key, ".")...), Element: key, Message: fmt.Sprintf(format, args...)})
	}
	if m.Name == "" {
		add("name", "missing (every plugin needs a unique name)")
	} else if !sdk.ValidName(m.Name) {
		add("name", "invalid name %q (want lowercase words joined by - or _)", m.Name)
	}
	switch {
	case m.Kind == "":
		add("kind", "missing (want navigator, provider, gate or tool)")
	case !m.Kind.Valid():
		add("kind", "unknown kind %q%s", m.Kind, suggest.Hint(string(m.Kind), []string{"navigator", "provider", "gate", "tool"}))
	}
	if m.Version == "" {
		add("version", "missing")
	} else if !semverRE.MatchString(m.Version) {
		add("version", "%q is not a semantic version (want e.g. 1.2.3)", m.Version)
	}
	switch {
	case !md.IsDefined("api"):
		add("api", "missing (this host speaks api = %d)", sdk.APIVersion)
	case m.API != sdk.APIVersion:
		add("api", "api version %d, host speaks %d", m.API, sdk.APIVersion)
	}
	switch {
	case m.Wasm == nil && m.Process == nil:
		add("wasm", "missing [wasm] or [process] section")
	case m.Wasm != nil && m.Process != nil:
		add("process", "both [wasm] and [process]; a plugin has one transport")
	case m.Wasm != nil:
		if m.Wasm.File == "" {
			add("wasm.file", "missing")
		}
		if m.Wasm.Command != "" || len(m.Wasm.Args) > 0 {
			add("wasm.command", "only [process] takes command and args")
		}
		if m.Wasm.AllowOutside {
			add("wasm.allow_outside", "only [process] takes allow_outside; a wasm module stays inside its plugin folder")
		}
	case m.Process != nil:
		if m.Process.Command == "" {
			add("process.command", "missing")
		}
		if m.Process.File != "" {
			add("process.file", "only [wasm] takes file; use command")
		}
	}
	if a := m.Artifact(); a != nil && a.SHA256 != "" && !sha256RE.MatchString(a.SHA256) {
		add(m.Transport()+".sha256", "%q is not a hex sha256 (64 lowercase hex digits)", a.SHA256)
	}
	if a := m.Artifact(); a != nil && (a.File != "" || a.Command != "") {
		key, value := "wasm.file", a.File
		if m.Process != nil {
			key, value = "process.command", a.Command
		}
		if msg := m.outside(value); msg != "" {
			add(key, "%s", msg)
		} else if _, err := os.Stat(m.ArtifactPath()); err != nil {
			add(key, "%s: no such file", m.ArtifactPath())
		}
	}
	for i, h := range m.Requests.HTTP {
		if !hostRE.MatchString(h) {
			add("requests.http."+strconv.Itoa(i), "%q is not host or host:port", h)
		}
	}
	if m.Requests.Memory != "" {
		if _, err := ParseSize(m.Requests.Memory); err != nil {
			add("requests.memory", "%v", err)
		}
	}
	if err := sdk.Invalid(withSchema(path, ix, raw, probs)...); err != nil {
		return nil, err
	}
	return &m, nil
}

// withSchema merges what ManifestSpec finds (unknown keys, types, allowed
// values) with the checks above, ordered by line: for a key both report,
// the message above, which says what to write, replaces the schema's.
func withSchema(path string, ix *tomlpos.Index, raw map[string]any, own []sdk.Problem) []sdk.Problem {
	c := &schema.Checker{File: path, Index: ix}
	c.Check(raw, ManifestSpec, nil)
	byKey := map[string]int{}
	for i, p := range own {
		if _, seen := byKey[p.Element]; !seen {
			byKey[p.Element] = i
		}
	}
	var out []sdk.Problem
	used := make([]bool, len(own))
	for _, p := range c.Problems() {
		if i, ok := byKey[p.Element]; ok {
			if !used[i] {
				out, used[i] = append(out, own[i]), true
			}
			continue
		}
		out = append(out, p)
	}
	for i, p := range own {
		if !used[i] {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// outside says why the artifact path value (as written in the manifest)
// resolves outside the plugin's folder, after cleaning and after resolving
// symlinks, or returns "" when it stays inside (or [process] allows
// outside). A path that does not exist is left to the existence check.
func (m *Manifest) outside(value string) string {
	const suffix = ", outside the plugin folder"
	optIn := ""
	if m.Process != nil {
		if m.Process.AllowOutside {
			return ""
		}
		optIn = " (set allow_outside = true in [process] to run a program outside it)"
	}
	if filepath.IsAbs(value) || filepath.IsAbs(filepath.FromSlash(value)) || filepath.VolumeName(value) != "" {
		return fmt.Sprintf("%q is an absolute path%s%s", value, suffix, optIn)
	}
	dir, err := filepath.Abs(m.Dir())
	if err != nil {
		return ""
	}
	joined := filepath.Join(dir, filepath.FromSlash(value))
	if !within(dir, joined) {
		return fmt.Sprintf("%q leads out of the plugin folder%s", value, optIn)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(joined)
	if err != nil {
		return "" // missing: the existence check says so
	}
	if !within(realDir, real) {
		return fmt.Sprintf("%q is a symlink to %s%s%s", value, real, suffix, optIn)
	}
	return ""
}

// within reports whether path is dir or lies below it; both are clean and
// absolute.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// tomlProblem positions a TOML syntax or type error.
func tomlProblem(path string, err error) sdk.Problem {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.LastKey != "" {
			return sdk.Problem{File: path, Line: pe.Position.Line, Element: pe.LastKey, Message: msg}
		}
		return sdk.Problem{File: path, Line: pe.Position.Line, Message: msg}
	}
	// Decoding (type) errors are not ParseErrors but say where in their text.
	if m := decodeErrRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return sdk.Problem{File: path, Line: line, Element: m[2], Message: m[3]}
	}
	return sdk.Problem{File: path, Message: strings.TrimPrefix(err.Error(), "toml: ")}
}

// ParseSize parses sizes such as "64MiB", "512KiB", "1GiB", "1048576"
// (schema.ParseSize: the manifest's memory is a schema.Size).
func ParseSize(s string) (uint64, error) { return schema.ParseSize(s) }
