package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// listingRegistry has (sorted by name) a process gate that shadows a builtin, a builtin
// gate, an unpinned process gate and one whose pinned sha256 does not
// match its artifact.
func listingRegistry(t *testing.T) (*Registry, string) {
	t.Helper()
	dir := t.TempDir()
	writePlugin(t, dir, "shadowing", strings.Replace(gateManifest, "%q", `"shadowing"`, 1), "bin")
	writePlugin(t, dir, "loose", strings.Replace(gateManifest, "%q", `"loose"`, 1)+"[requests]\nhttp = [\"a.com:443\"]\nmemory = \"16MiB\"\n", "bin")
	writePlugin(t, dir, "pinned", strings.Replace(gateManifest, "%q", `"pinned"`, 1)+"sha256 = \""+strings.Repeat("0", 64)+"\"\n", "bin")
	entries, err := Discover([]string{dir}, []sdk.Plugin{builtinGate{"shadowing"}, builtinGate{"builtin-only"}})
	if err != nil {
		t.Fatal(err)
	}
	return NewRegistry(entries), dir
}

func TestList(t *testing.T) {
	reg, dir := listingRegistry(t)
	if got := List(reg.Entries(), sdk.KindNavigator); got == nil || len(got) != 0 {
		t.Errorf("no navigators: got %#v, want an empty list", got)
	}
	rows := List(reg.Entries(), "")
	var b bytes.Buffer
	if err := WriteList(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := `NAME          KIND  VERSION  TRANSPORT  CHECKSUM  SOURCE
builtin-only  gate  1.0.0    builtin    builtin   builtin
loose         gate  1.0.0    process    unpinned  DIR/loose/plugin.toml
pinned        gate  1.0.0    process    mismatch  DIR/pinned/plugin.toml
shadowing     gate  1.0.0    process    unpinned  DIR/shadowing/plugin.toml (shadows builtin)
`
	if got := strings.ReplaceAll(b.String(), dir, "DIR"); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestInspect(t *testing.T) {
	reg, _ := listingRegistry(t)
	in, err := reg.Inspect(context.Background(), "builtin-only")
	if err != nil {
		t.Fatal(err)
	}
	in.Config = []sdk.ConfigField{{Name: "threshold", Type: "number", Default: 0.5, Doc: "how sure"}, {Name: "key", Type: "string", Required: true}}
	var b bytes.Buffer
	if err := in.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `name:       builtin-only
kind:       gate
version:    1.0.0
api:        ` + itoa(sdk.APIVersion) + `
transport:  builtin
source:     builtin
checksum:   builtin
config:
  threshold  number (default 0.5)  how sure
  key        string required       
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if _, err := reg.Inspect(context.Background(), "pinned"); err == nil || !strings.Contains(err.Error(), "sha256 mismatch") {
		t.Errorf("a mismatched plugin: got %v", err)
	}
	manual := &Inspection{Listed: Listed{Name: "x"}, Artifact: "/p/x.wasm", Requests: &Requests{HTTP: []string{"a:1", "b:2"}, Memory: "1MiB"}}
	b.Reset()
	if err := manual.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "artifact:         /p/x.wasm\nrequests http:    a:1, b:2\nrequests memory:  1MiB\n") {
		t.Errorf("manifest fields: got\n%s", b.String())
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestVerify verifies without a process dialer, so that a process plugin
// fails to open; --pin pins it before it fails.
func TestVerify(t *testing.T) {
	reg, dir := listingRegistry(t)
	rows, errs := reg.Verify(context.Background(), []string{"builtin-only", "pinned", "nope"}, false)
	if len(rows) != 2 || rows[1].Name != "pinned" || rows[1].Status != "fail" || rows[0].Status != "ok" {
		t.Fatalf("rows: %+v", rows)
	}
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "sha256 mismatch") || errs[1].Error() != `unknown plugin "nope"` {
		t.Errorf("errs: %v", errs)
	}

	rows, errs = reg.Verify(context.Background(), []string{"loose"}, true)
	if len(rows) != 1 || rows[0].Pinned == "" || rows[0].Checksum != ChecksumOK || rows[0].Status != "fail" || len(errs) != 1 {
		t.Fatalf("pinned then failed: %+v, %v", rows, errs)
	}
	m, err := ReadManifest(filepath.Join(dir, "loose", ManifestFile))
	if err != nil || m.Process.SHA256 != rows[0].Pinned {
		t.Errorf("manifest sha256 = %q, %v; want %q", m.Process.SHA256, err, rows[0].Pinned)
	}

	var b bytes.Buffer
	err = WriteVerified(&b, []Verified{
		{Name: "a", Status: "ok", Transport: "builtin"},
		{Name: "b", Status: "ok", Transport: "wasm", Version: "1.0.0", Checksum: "ok", Source: "p/b/plugin.toml", Pinned: "abc"},
		{Name: "c", Status: "fail", Source: "p/c/plugin.toml"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "ok       a (builtin)\npinned   b sha256 abc\nok       b wasm 1.0.0 checksum ok (p/b/plugin.toml)\nFAIL     c (p/c/plugin.toml)\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestInspectHostile: what a plugin says of itself (its description, its
// config fields' names and docs) is shown escaped, never obeyed by the
// terminal, and a tab or newline in it moves no column.
func TestInspectHostile(t *testing.T) {
	in := &Inspection{Listed: Listed{Name: "x", Description: "d\x1b]0;pwned\x07\tq"},
		Config: []sdk.ConfigField{{Name: "k\tl", Type: "string", Doc: "a\nb\u009b2J"}, {Name: "m", Type: "number", Doc: "n"}}}
	var b bytes.Buffer
	if err := in.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `description:  d\x1b]0;pwned\x07\tq` + "\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("got:\n%s\nwant it to hold\n%s", b.String(), want)
	}
	want = "config:\n  k\\tl  string  a\\nb\\u009b2J\n  m     number  n\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("got:\n%s\nwant it to end\n%s", b.String(), want)
	}
}
