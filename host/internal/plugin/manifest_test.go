package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
	"github.com/sextant-dev/sextant/sdk"
)

func writePlugin(t *testing.T, dir, name, manifest string, artifact string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if artifact != "" {
		if err := os.WriteFile(filepath.Join(d, artifact), []byte("artifact of "+name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(d, ManifestFile)
	if err := os.WriteFile(p, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseManifest(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "g.wasm"), []byte("x"), 0o644)
	path := filepath.Join(dir, "plugin.toml")
	tests := []struct {
		name string
		doc  string
		want []string // one line per problem, path prefix stripped
	}{
		{"valid", "name = \"g\"\nkind = \"gate\"\nversion = \"1.0.0\"\napi = 1\n[wasm]\nfile = \"g.wasm\"\n[requests]\nhttp = [\"api.example.com:443\"]\nmemory = \"32MiB\"\n", nil},
		{"missing everything", "", []string{
			"name: missing (every plugin needs a unique name)",
			"kind: missing (want navigator, provider, gate or tool)",
			"version: missing",
			"api: missing (this host speaks api = 1)",
			"wasm: missing [wasm] or [process] section"}},
		{"both transports", "name = \"g\"\nkind = \"gate\"\nversion = \"1.0.0\"\napi = 1\n[wasm]\nfile = \"g.wasm\"\n[process]\ncommand = \"g.wasm\"\n",
			[]string{":7: process: both [wasm] and [process]; a plugin has one transport"}},
		{"bad values", "name = \"G!\"\nkind = \"gate\"\nversion = \"1.0\"\napi = 1\n[wasm]\nfile = \"g.wasm\"\nsha256 = \"abc\"\n[requests]\nhttp = [\"not a host\"]\nmemory = \"lots\"\n", []string{
			`:1: name: invalid name "G!" (want lowercase words joined by - or _)`,
			`:3: version: "1.0" is not a semantic version (want e.g. 1.2.3)`,
			`:7: wasm.sha256: "abc" is not a hex sha256 (64 lowercase hex digits)`,
			`:9: requests.http.0: "not a host" is not host or host:port`,
			`:10: requests.memory: "lots" is not a size (want e.g. 64MiB)`}},
		{"unknown nested key", "name = \"g\"\nkind = \"gate\"\nversion = \"1.0.0\"\napi = 1\n[wasm]\nfile = \"g.wasm\"\nsha = \"x\"\n",
			[]string{`:7: wasm.sha: unknown key (did you mean "sha256"?)`}},
		{"misspelt key and kind", "nmae = \"g\"\nkind = \"gaet\"\nversion = \"1.0.0\"\napi = 1\n[wasm]\nfile = \"g.wasm\"\n[process]\nallow_outisde = true\n", []string{
			"name: missing (every plugin needs a unique name)",
			`:1: nmae: unknown key (did you mean "name"?)`,
			`:2: kind: unknown kind "gaet" (did you mean "gate"?)`,
			":7: process: both [wasm] and [process]; a plugin has one transport",
			`:8: process.allow_outisde: unknown key (did you mean "allow_outside"?)`}},
		{"wrong type", "name = \"g\"\nkind = \"gate\"\nversion = \"1.0.0\"\napi = \"one\"\n",
			[]string{`:4: api: incompatible types: TOML value has type string; destination has type integer`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest(path, []byte(tc.doc))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Fatalf("err = %v, want an invalid error", err)
			}
			got := strings.Split(strings.ReplaceAll(err.Error(), path, ""), "\n")
			for i := range got {
				got[i] = strings.TrimPrefix(got[i], ": ")
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

type builtinGate struct{ name string }

func (g builtinGate) Describe() sdk.Info {
	return sdk.Info{Name: g.name, Kind: sdk.KindGate, Version: "1.0.0", API: sdk.APIVersion}
}
func (builtinGate) Check(context.Context, *sdk.Comparison) (*sdk.Verdict, error) {
	return &sdk.Verdict{Ruling: sdk.Pass}, nil
}

const gateManifest = "name = %q\nkind = \"gate\"\nversion = \"1.0.0\"\napi = 1\n[process]\ncommand = \"bin\"\n"

func TestDiscoverAndRegistry(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writePlugin(t, a, "one", strings.Replace(gateManifest, "%q", `"shadowing"`, 1), "bin")
	writePlugin(t, b, "one", strings.Replace(gateManifest, "%q", `"shadowing"`, 1), "bin")
	writePlugin(t, b, "two", strings.Replace(gateManifest, "%q", `"pinned"`, 1)+"sha256 = \""+strings.Repeat("0", 64)+"\"\n", "bin")
	entries, err := Discover([]string{a, b, filepath.Join(dir, "missing")}, []sdk.Plugin{builtinGate{"shadowing"}, builtinGate{"builtin-only"}})
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry(entries)
	got := strings.Join(reg.Names(""), ",")
	if got != "builtin-only,pinned,shadowing" {
		t.Fatalf("names = %s", got)
	}
	e, _ := reg.Lookup("shadowing")
	if e.Transport != TransportProcess || len(e.Shadows) != 2 || e.Shadows[1] != TransportBuiltin || e.Checksum != ChecksumUnpinned {
		t.Fatalf("shadowing entry = %+v", e)
	}
	if e, _ := reg.Lookup("pinned"); e.Checksum != ChecksumMismatch {
		t.Fatalf("pinned checksum = %s, want mismatch", e.Checksum)
	}

	ctx := context.Background()
	h, err := reg.Open(ctx, "builtin-only", Grant{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Plugin.(sdk.Gate); !ok || h.Entry.Transport != TransportBuiltin {
		t.Fatalf("builtin handle = %+v", h)
	}
	_, err = reg.Open(ctx, "pinned", Grant{})
	if err == nil || !strings.Contains(err.Error(), `plugin "pinned": sha256 mismatch (manifest 000000000000…, file `) {
		t.Fatalf("open pinned: %v", err)
	}
	_, err = reg.Open(ctx, "shadowing", Grant{})
	if err == nil || err.Error() != `plugin "shadowing": process transport not available in this host` {
		t.Fatalf("open without dialer: %v", err)
	}
	_, err = reg.Open(ctx, "builtin-onyl", Grant{})
	if err == nil || err.Error() != `unknown plugin "builtin-onyl" (did you mean "builtin-only"?)` {
		t.Fatalf("open unknown: %v", err)
	}
}

func TestPin(t *testing.T) {
	dir := t.TempDir()
	p := writePlugin(t, dir, "g", strings.Replace(gateManifest, "%q", `"g"`, 1)+"# keep this comment\n", "bin")
	m, err := ReadManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Pin(m)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := ReadManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Process.SHA256 != sum || checksumState(m2) != ChecksumOK {
		t.Fatalf("after pin: sha256 %q state %s", m2.Process.SHA256, checksumState(m2))
	}
	data, _ := os.ReadFile(p)
	if !strings.Contains(string(data), "# keep this comment") {
		t.Fatalf("pin lost the comment:\n%s", data)
	}
}

// pinEnv names the manifest TestPinCrash's child process pins.
const pinEnv = "SEXTANT_TEST_PIN"

// TestPinCrash: a pin killed (SIGKILL, at its failpoint) once it wrote the
// pinned manifest but before that replaced plugin.toml leaves plugin.toml
// whole and as it was; pinning again then works and keeps the file's
// mode. Before, plugin.toml was rewritten in place, and a crash during the
// write could leave it truncated.
func TestPinCrash(t *testing.T) {
	if p := os.Getenv(pinEnv); p != "" {
		m, err := ReadManifest(p)
		if err == nil {
			_, err = Pin(m)
		}
		fmt.Fprintln(os.Stderr, "pin returned:", err)
		os.Exit(3)
	}
	p := writePlugin(t, t.TempDir(), "g", strings.Replace(gateManifest, "%q", `"g"`, 1), "bin")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPinCrash$")
	cmd.Env = append(os.Environ(), pinEnv+"="+p, failpoint.Env+"="+failpoint.PluginPinWritten+":1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "failpoint "+failpoint.PluginPinWritten+":1") {
		t.Fatalf("the pin was not killed at its failpoint: %v\n%s", err, out)
	}
	if after, err := os.ReadFile(p); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("plugin.toml after the crash (%v):\n%s", err, after)
	}
	m, err := ReadManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Pin(m); err != nil {
		t.Fatal(err)
	}
	if m2, err := ReadManifest(p); err != nil || checksumState(m2) != ChecksumOK {
		t.Fatalf("pinned again: %v", err)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode after pin: %v", info.Mode())
	}
}

func TestGrantedHTTP(t *testing.T) {
	got := grantedHTTP([]string{"a.com:443", "b.com:443"}, []string{"b.com:443", "c.com:443"})
	if len(got) != 1 || got[0] != "b.com:443" {
		t.Fatalf("granted = %v", got)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"64MiB": 64 << 20, "1GiB": 1 << 30, "512": 512, "2 KiB": 2048} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "MiB", "1.5GiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		}
	}
}

// TestManifestPathsStayInside: an artifact path that leads out of the plugin
// folder — absolute, through "..", or through a symlink — is refused with
// one positioned line; [process] allow_outside = true opts a command out.
func TestManifestPathsStayInside(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	dir := filepath.Join(root, "plugins", "p")
	for _, d := range []string{outside, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(outside, "realbin"), filepath.Join(dir, "bin"), filepath.Join(dir, "p.wasm")} {
		if err := os.WriteFile(f, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "realbin"), filepath.Join(dir, "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin", filepath.Join(dir, "link-in")); err != nil {
		t.Fatal(err)
	}
	// A symlinked sub-folder leading out is an escape too.
	if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	realOutside, _ := filepath.EvalSymlinks(outside)
	const head = "name = \"p\"\nkind = \"gate\"\nversion = \"1.0.0\"\napi = 1\n"
	path := filepath.Join(dir, "plugin.toml")
	tests := []struct {
		name, doc, want string // want "" = valid
	}{
		{"inside", head + "[process]\ncommand = \"bin\"\n", ""},
		{"inside via ./", head + "[process]\ncommand = \"./bin\"\n", ""},
		{"symlink inside", head + "[process]\ncommand = \"link-in\"\n", ""},
		{"dotdot", head + "[process]\ncommand = \"../../outside/realbin\"\n",
			`:6: process.command: "../../outside/realbin" leads out of the plugin folder (set allow_outside = true in [process] to run a program outside it)`},
		{"dotdot back in", head + "[process]\ncommand = \"../p/bin\"\n", ""},
		{"absolute", head + "[process]\ncommand = \"/bin/sh\"\n",
			`:6: process.command: "/bin/sh" is an absolute path, outside the plugin folder (set allow_outside = true in [process] to run a program outside it)`},
		{"symlink out", head + "[process]\ncommand = \"link-out\"\n",
			`:6: process.command: "link-out" is a symlink to ` + filepath.Join(realOutside, "realbin") + `, outside the plugin folder (set allow_outside = true in [process] to run a program outside it)`},
		{"symlinked folder out", head + "[process]\ncommand = \"sub/realbin\"\n",
			`:6: process.command: "sub/realbin" is a symlink to ` + filepath.Join(realOutside, "realbin") + `, outside the plugin folder (set allow_outside = true in [process] to run a program outside it)`},
		{"absolute allowed", head + "[process]\ncommand = \"/bin/sh\"\nallow_outside = true\n", ""},
		{"dotdot allowed", head + "[process]\ncommand = \"../../outside/realbin\"\nallow_outside = true\n", ""},
		{"wasm dotdot", head + "[wasm]\nfile = \"../../../../../../etc/passwd\"\n",
			`:6: wasm.file: "../../../../../../etc/passwd" leads out of the plugin folder`},
		{"wasm absolute", head + "[wasm]\nfile = \"/etc/passwd\"\n",
			`:6: wasm.file: "/etc/passwd" is an absolute path, outside the plugin folder`},
		{"wasm symlink", head + "[wasm]\nfile = \"link-out\"\n",
			`:6: wasm.file: "link-out" is a symlink to ` + filepath.Join(realOutside, "realbin") + `, outside the plugin folder`},
		{"wasm has no opt-in", head + "[wasm]\nfile = \"p.wasm\"\nallow_outside = true\n",
			`:7: wasm.allow_outside: only [process] takes allow_outside; a wasm module stays inside its plugin folder`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest(path, []byte(tc.doc))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || err.Error() != path+tc.want {
				t.Fatalf("err = %v\nwant %s", err, path+tc.want)
			}
		})
	}
}
