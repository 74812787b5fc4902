// Package tck reads the DMN TCK test folders of the shared corpus (a
// model and its test cases) and compares a decision's result with what a
// case expects. The dmn package's conformance test and the `sextant
// decide` test both use it, so the two judge results the same way.
package tck

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sextant-dev/sextant/navigators/feel"
)

// ErrAbsent reports that the corpus is not on this machine.
var ErrAbsent = errors.New("dmn tck corpus absent")

// Locate finds the corpus folder: $SEXTANT_DMN_CORPUS, else
// ../shared/corpus/dmn/tck beside the repository root found above dir.
func Locate(dir string) (string, error) {
	if p := os.Getenv("SEXTANT_DMN_CORPUS"); p != "" {
		return p, nil
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, "..", "shared", "corpus", "dmn", "tck")
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

// Suite is one TCK folder: a model and its test cases.
type Suite struct {
	Name  string // the folder, such as compliance-level-2/0004-simpletable-U
	Model string // path of the model file
	Cases []Case
}

// Case is one test case: inputs and the results expected of decisions.
type Case struct {
	ID string
	// Service names the decision service the case invokes; empty when
	// each result names a decision.
	Service string
	Inputs  map[string]any // FEEL values
	Results []Result
}

// Result is the value expected of one decision.
type Result struct {
	Name string
	// Error says the decision is expected to fail: an error, or null.
	Error    bool
	Expected any // a FEEL value
}

// Load reads every folder under root that holds a model and a test file.
func Load(root string) ([]Suite, error) {
	var tests []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, "-test-01.xml") {
			tests = append(tests, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(tests)
	var out []Suite
	for _, t := range tests {
		s, err := loadSuite(root, t)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// node is a generic XML element of a test file.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Kids    []node     `xml:",any"`
}

func (n *node) attr(local string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func (n *node) child(local string) *node {
	for i := range n.Kids {
		if n.Kids[i].XMLName.Local == local {
			return &n.Kids[i]
		}
	}
	return nil
}

func loadSuite(root, path string) (Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Suite{}, err
	}
	var doc node
	if err := xml.Unmarshal(data, &doc); err != nil {
		return Suite{}, fmt.Errorf("%s: %w", path, err)
	}
	rel, _ := filepath.Rel(root, filepath.Dir(path))
	s := Suite{Name: filepath.ToSlash(rel)}
	if mn := doc.child("modelName"); mn != nil {
		s.Model = filepath.Join(filepath.Dir(path), strings.TrimSpace(mn.Text))
	}
	for _, tc := range doc.Kids {
		if tc.XMLName.Local != "testCase" {
			continue
		}
		c := Case{ID: tc.attr("id"), Inputs: map[string]any{}}
		if tc.attr("type") == "decisionService" {
			c.Service = tc.attr("invocableName")
		}
		for _, k := range tc.Kids {
			switch k.XMLName.Local {
			case "inputNode":
				v, err := value(&k)
				if err != nil {
					return Suite{}, fmt.Errorf("%s: case %s: input %s: %w", path, c.ID, k.attr("name"), err)
				}
				c.Inputs[k.attr("name")] = v
			case "resultNode":
				r := Result{Name: k.attr("name"), Error: k.attr("errorResult") == "true"}
				if e := k.child("expected"); e != nil {
					v, err := value(e)
					if err != nil {
						return Suite{}, fmt.Errorf("%s: case %s: result %s: %w", path, c.ID, r.Name, err)
					}
					r.Expected = v
				}
				c.Results = append(c.Results, r)
			}
		}
		s.Cases = append(s.Cases, c)
	}
	return s, nil
}

var (
	toDate     = feel.MustParse("date(s)")
	toTime     = feel.MustParse("time(s)")
	toDateTime = feel.MustParse("date and time(s)")
	toDuration = feel.MustParse("duration(s)")
)

// value reads the value held by n (an inputNode, an expected, an item):
// a <value>, a <list> of <item>s, or <component>s making a context.
func value(n *node) (any, error) {
	if v := n.child("value"); v != nil {
		return scalar(v)
	}
	if l := n.child("list"); l != nil {
		out := []any{}
		for i := range l.Kids {
			if l.Kids[i].XMLName.Local != "item" {
				continue
			}
			v, err := value(&l.Kids[i])
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	var c *feel.Context
	for i := range n.Kids {
		k := &n.Kids[i]
		if k.XMLName.Local != "component" {
			continue
		}
		if c == nil {
			c = feel.NewContext()
		}
		v, err := value(k)
		if err != nil {
			return nil, err
		}
		c.Put(k.attr("name"), v)
	}
	if c != nil {
		return c, nil
	}
	if n.attr("nil") == "true" {
		return nil, nil
	}
	return nil, nil
}

func scalar(v *node) (any, error) {
	if v.attr("nil") == "true" {
		return nil, nil
	}
	typ := v.attr("type")
	if i := strings.IndexByte(typ, ':'); i >= 0 {
		typ = typ[i+1:]
	}
	text := v.Text
	var conv *feel.Expr
	switch typ {
	case "decimal", "double", "int", "integer", "long", "float":
		t := strings.TrimSpace(text)
		switch t {
		case "NaN", "INF", "-INF":
			return nil, nil
		}
		n, err := feel.ParseNumber(t)
		if err != nil {
			return nil, err
		}
		return n, nil
	case "boolean":
		return strings.TrimSpace(text) == "true", nil
	case "date":
		conv = toDate
	case "time":
		conv = toTime
	case "dateTime":
		conv = toDateTime
	case "duration":
		conv = toDuration
	default:
		if len(v.Kids) > 0 {
			// A value may hold a list or components directly.
			return value(v)
		}
		return text, nil
	}
	r, err := conv.Eval(map[string]any{"s": strings.TrimSpace(text)})
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("bad %s %q", typ, text)
	}
	return r, nil
}

// Check compares a decision's outcome with the expected result: numbers
// to 1e-9 relative, temporal values by their canonical string, lists item
// by item, contexts key by key. A result expected to fail passes when the
// evaluation failed or gave null. It returns why they differ.
func Check(r Result, got any, evalErr error) (bool, string) {
	if r.Error {
		if evalErr != nil || got == nil {
			return true, ""
		}
		return false, fmt.Sprintf("want an error, got %s", feel.Format(got))
	}
	if evalErr != nil {
		return false, "error: " + evalErr.Error()
	}
	g, err := feel.MarshalJSON(got)
	if err != nil {
		return false, err.Error()
	}
	return CheckJSON(r, g)
}

// CheckJSON is Check for a result given as its JSON (what `sextant
// decide --json` prints).
func CheckJSON(r Result, got []byte) (bool, string) {
	var g, w any
	if err := decode(got, &g); err != nil {
		return false, fmt.Sprintf("result is not JSON: %v", err)
	}
	if r.Error {
		if g == nil {
			return true, ""
		}
		return false, fmt.Sprintf("want an error, got %s", bytes.TrimSpace(got))
	}
	want, err := feel.MarshalJSON(r.Expected)
	if err != nil {
		return false, err.Error()
	}
	if err := decode(want, &w); err != nil {
		return false, err.Error()
	}
	if same(g, w) {
		return true, ""
	}
	return false, fmt.Sprintf("got %s, want %s", bytes.TrimSpace(got), want)
}

func decode(data []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
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
		if gn == wv {
			return true
		}
		a, err1 := gn.Float64()
		b, err2 := wv.Float64()
		if err1 != nil || err2 != nil {
			return false
		}
		return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
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
		if !ok {
			return false
		}
		for k, x := range wv {
			if !same(gm[k], x) {
				return false
			}
		}
		for k, x := range gm {
			if _, ok := wv[k]; !ok && x != nil {
				return false
			}
		}
		return true
	}
	return false
}
