package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestJSONTopLevelKeys checks the fixed key order and the documented
// top-level fields.
func TestJSONTopLevelKeys(t *testing.T) {
	out := render(t, WriteJSON, failingReport())
	dec := json.NewDecoder(bytes.NewReader(out))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("want an object, got %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	want := "schema_version pipeline ruling exit_code baseline candidate tasks fidelity self_replays min_fidelity reasons metrics gates regressed flipped divergences matrix"
	if got := strings.Join(keys, " "); got != want {
		t.Fatalf("keys:\n got %s\nwant %s", got, want)
	}

	var doc struct {
		Tasks    int     `json:"tasks"`
		Fidelity float64 `json:"fidelity"`
		ExitCode int     `json:"exit_code"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Tasks != 200 || doc.Fidelity != 0.985 || doc.ExitCode != 1 {
		t.Fatalf("got tasks %d, fidelity %v, exit code %d", doc.Tasks, doc.Fidelity, doc.ExitCode)
	}
}

// TestJSONRounding checks that float noise below six significant digits
// does not change the output, and that non-finite numbers become null.
func TestJSONRounding(t *testing.T) {
	base := func(effect, lo, p float64) *Report {
		return &Report{Fidelity: 0.1 + 0.2, Metrics: []sdk.Metric{{Name: "m", Effect: effect, CILow: lo, P: p}}}
	}
	a := render(t, WriteJSON, base(0.05, -0.0123456789, 0.5))
	b := render(t, WriteJSON, base(0.05000000000000001, -0.01234567890001, 0.49999999999))
	if !bytes.Equal(a, b) {
		t.Fatalf("noise changed the output:\n%s\n%s", a, b)
	}
	for _, want := range []string{`"fidelity": 0.3,`, `"ci_low": -0.0123457,`, `"effect": 0.05,`, `"p": 0.5,`} {
		if !bytes.Contains(a, []byte(want)) {
			t.Errorf("missing %s in\n%s", want, a)
		}
	}

	c := render(t, WriteJSON, base(math.NaN(), math.Inf(-1), math.Copysign(0, -1)))
	for _, want := range []string{`"effect": null,`, `"ci_low": null,`, `"p": 0,`} {
		if !bytes.Contains(c, []byte(want)) {
			t.Errorf("missing %s in\n%s", want, c)
		}
	}
}

// TestJSONEmptyLists checks that lists are arrays, never null, so
// consumers need no null checks.
func TestJSONEmptyLists(t *testing.T) {
	out := render(t, WriteJSON, &Report{Gates: []GateResult{{Name: "g", Ruling: sdk.Pass}}})
	if bytes.Contains(out, []byte("null")) {
		t.Fatalf("null in\n%s", out)
	}
	for _, want := range []string{`"metrics": [],`, `"regressed": [],`, `"flipped": [],`, `"divergences": []`, `"reasons": [],`, `"metrics": {}`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
}
