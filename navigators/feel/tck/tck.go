// Package tck reads the DMN TCK cases of the shared corpus and compares a
// FEEL result, in its JSON form, with what a case expects. Both the feel
// package's conformance test and the `sextant expr` test use it, so the
// two judge results the same way.
package tck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/sextant-dev/sextant/navigators/feel"
)

// Case is one TCK expression with its expected result.
type Case struct {
	ID       string          `json:"id"`
	Expr     string          `json:"expr"`
	Kind     string          `json:"kind"`
	Expected json.RawMessage `json:"expected"`
}

// Category is the TCK test folder the case comes from.
func (c Case) Category() string {
	cat, _, _ := strings.Cut(c.ID, "/")
	return cat
}

// ErrAbsent reports that the corpus is not on this machine.
var ErrAbsent = errors.New("tck corpus absent")

// Locate finds dmn-tck-cases.json: $SEXTANT_FEEL_CORPUS, else
// ../shared/corpus/feel beside the repository root found above dir.
func Locate(dir string) (string, error) {
	if p := os.Getenv("SEXTANT_FEEL_CORPUS"); p != "" {
		return p, nil
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, "..", "shared", "corpus", "feel", "dmn-tck-cases.json")
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("%w: %s", ErrAbsent, p)
			}
			return p, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("%w: no go.mod above %s", ErrAbsent, dir)
		}
		d = parent
	}
}

// Load reads the cases.
func Load(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tck cases: %w", err)
	}
	var cs []Case
	if err := json.Unmarshal(data, &cs); err != nil {
		return nil, fmt.Errorf("load tck cases %s: %w", path, err)
	}
	return cs, nil
}

// Check compares got, the JSON of a FEEL result, with the case's expected
// value: numbers to 1e-9 relative, durations by value (P0D is PT0S),
// everything else exactly. It returns why they differ.
func Check(c Case, got []byte) (bool, string) {
	var g, want any
	if err := decode(got, &g); err != nil {
		return false, fmt.Sprintf("result is not JSON: %v", err)
	}
	if err := decode(c.Expected, &want); err != nil {
		return false, fmt.Sprintf("expected is not JSON: %v", err)
	}
	if c.Kind == "duration" {
		ws, ok1 := want.(string)
		gs, ok2 := g.(string)
		if ok1 && ok2 && sameDuration(ws, gs) {
			return true, ""
		}
		return false, fmt.Sprintf("got %s, want %s", bytes.TrimSpace(got), c.Expected)
	}
	if same(g, want) {
		return true, ""
	}
	return false, fmt.Sprintf("got %s, want %s", bytes.TrimSpace(got), c.Expected)
}

func decode(data []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func sameDuration(a, b string) bool {
	x, err1 := feel.MustParse("duration(d)").Eval(map[string]any{"d": a})
	y, err2 := feel.MustParse("duration(d)").Eval(map[string]any{"d": b})
	if err1 != nil || err2 != nil || x == nil || y == nil {
		return a == b
	}
	eq, _ := feel.MustParse("x = y").Eval(map[string]any{"x": x, "y": y})
	return eq == true
}

func same(g, w any) bool {
	switch wv := w.(type) {
	case nil:
		return g == nil
	case bool, string:
		return g == w
	case json.Number:
		gn, ok := g.(json.Number)
		if !ok {
			return false
		}
		a, err1 := gn.Float64()
		b, err2 := wv.Float64()
		if err1 != nil || err2 != nil {
			return gn == wv
		}
		if a == b {
			return true
		}
		return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
	case []any:
		gl, ok := g.([]any)
		if !ok || len(gl) != len(wv) {
			return false
		}
		for i := range wv {
			if !same(gl[i], wv[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		gm, ok := g.(map[string]any)
		if !ok || len(gm) != len(wv) {
			return false
		}
		for k, x := range wv {
			if !same(gm[k], x) {
				return false
			}
		}
		return true
	}
	return false
}
