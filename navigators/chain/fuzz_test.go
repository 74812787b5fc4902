package chain

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
// accepts must walk to its end once its inputs are given.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.toml"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(answerChain))
	f.Add([]byte("name = \"x\"\nsteps = [{id = \"a\", outputs = [\"o\"]}, {id = \"b\", inputs = [\"o\"], chain = [{id = \"c\"}]}]\n"))
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
		input := map[string]any{}
		rt, _ := n.routine(r.Hash)
		for _, in := range rt.top.inputs {
			input[in] = in
		}
		w := &walker{tb: t, impl: n, nav: n, hash: r.Hash, st: sdk.State{Routine: r.Hash, Env: sdk.Env{Input: input}}}
		w.run()
	})
}
