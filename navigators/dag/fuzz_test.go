package dag

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// FuzzLoad feeds arbitrary documents to the loader. It must never panic,
// must fail only with positioned sdk.Invalid problems, and a routine it
// accepts must start and walk to its end.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.toml"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name = \"x\"\n[tasks.a]\ndepends_on = [\"b\"]\n[tasks.b]\ndepends_on = [\"a\"]\n"))
	f.Add([]byte("name = \"x\"\n[tasks.a]\nfor_each = \"vars.l\"\nwhen = \"vars.l != nil\"\n[tasks.b]\ndepends_on = [\"a\"]\ntrigger_rule = \"one_done\"\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		n := New()
		r, err := n.Load(context.Background(), &sdk.LoadRequest{Name: "f.toml", Routine: src})
		if err != nil {
			var e *sdk.Error
			if !errors.As(err, &e) || e.Code != sdk.CodeInvalid || len(e.Problems) == 0 {
				t.Fatalf("not a problem list: %#v", err)
			}
			for _, p := range e.Problems {
				if p.File != "f.toml" || p.Message == "" || strings.Contains(p.Message, "\n") {
					t.Fatalf("bad problem: %#v", p)
				}
			}
			return
		}
		w := &walker{tb: t, impl: n, nav: n, hash: r.Hash, st: sdk.State{Routine: r.Hash, Env: sdk.Env{Vars: map[string]any{"l": []any{1, 2}}}}, outcome: ok}
		w.run()
	})
}
