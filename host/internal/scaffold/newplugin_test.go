package scaffold_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/scaffold"
	"github.com/sextant-dev/sextant/sdk"
)

func TestNewPlugin(t *testing.T) {
	p, err := scaffold.NewPlugin("pii-gate", "gate", "")
	want := scaffold.Plugin{Name: "pii-gate", Kind: "gate", API: sdk.APIVersion, Module: "example.com/pii-gate", Description: "a gate plugin"}
	if err != nil || p != want {
		t.Errorf("got %+v, %v; want %+v", p, err, want)
	}
	if p, err := scaffold.NewPlugin("t", "tool", "git.example/me/t"); err != nil || p.Module != "git.example/me/t" {
		t.Errorf("--module: got %+v, %v", p, err)
	}
	for _, tt := range []struct{ name, kind, msg string }{
		{"Bad Name", "gate", `plugin name "Bad Name": want lowercase words joined by - or _`},
		{"ok", "widget", `--kind: "widget" is not navigator, provider, gate or tool`},
		{"ok", "", `--kind: "" is not navigator, provider, gate or tool`},
	} {
		if _, err := scaffold.NewPlugin(tt.name, tt.kind, ""); !errors.Is(err, sdk.ErrInvalid) || err.Error() != tt.msg {
			t.Errorf("NewPlugin(%q, %q): got %v, want %s (sdk.ErrInvalid)", tt.name, tt.kind, err, tt.msg)
		}
	}
}

func TestWriteNext(t *testing.T) {
	p := scaffold.Plugin{Name: "g", Kind: "gate"}
	for _, tt := range []struct {
		src   scaffold.SDK
		notes string
	}{
		{scaffold.SDK{Version: "v1.2.3"}, "wrote gate plugin \"g\" in d/g (sdk v1.2.3); build it with:\n"},
		{scaffold.SDK{Version: "v0.0.0", Dir: "/src/sextant/sdk"}, "wrote gate plugin \"g\" in d/g (sdk v0.0.0, built from /src/sextant/sdk through go.work); build it with:\n"},
	} {
		var notes, out strings.Builder
		if err := p.WriteNext(&notes, &out, "d/g", tt.src); err != nil {
			t.Fatal(err)
		}
		if notes.String() != tt.notes {
			t.Errorf("notes %q, want %q", notes.String(), tt.notes)
		}
		if want := "go -C d/g build -o g .\nGOOS=wasip1 GOARCH=wasm go -C d/g build -buildmode=c-shared -o g.wasm .\nmake -C d/g test\n"; out.String() != want {
			t.Errorf("commands %q, want %q", out.String(), want)
		}
	}
}
