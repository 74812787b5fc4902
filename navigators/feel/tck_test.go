package feel_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/navigators/feel"
	"github.com/sextant-dev/sextant/navigators/feel/tck"
)

// tckThreshold is the share of the DMN TCK cases that must pass. It is a
// ratchet: raise it when the engine improves, never lower it.
const tckThreshold = 0.99

// TestTCK runs the DMN TCK cases of ../shared/corpus/feel through Parse and
// Eval and prints the pass rate per kind and per TCK folder.
func TestTCK(t *testing.T) {
	path, err := tck.Locate(".")
	if errors.Is(err, tck.ErrAbsent) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	cases, err := tck.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 5, 17, 10, 30, 0, 0, time.UTC)
	type tally struct{ pass, total int }
	byKind, byCat := map[string]*tally{}, map[string]*tally{}
	var failures []string
	pass := 0
	for _, c := range cases {
		ok, why := runCase(c, at)
		for _, m := range []struct {
			m map[string]*tally
			k string
		}{{byKind, c.Kind}, {byCat, c.Category()}} {
			if m.m[m.k] == nil {
				m.m[m.k] = &tally{}
			}
			m.m[m.k].total++
			if ok {
				m.m[m.k].pass++
			}
		}
		if ok {
			pass++
		} else {
			failures = append(failures, fmt.Sprintf("%s: %s: %s", c.ID, c.Expr, why))
		}
	}
	report := func(title string, m map[string]*tally) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "  %-48s %4d/%-4d %5.1f%%\n", k, m[k].pass, m[k].total, 100*float64(m[k].pass)/float64(m[k].total))
		}
		t.Logf("%s:\n%s", title, b.String())
	}
	report("by kind", byKind)
	if testing.Verbose() {
		report("by TCK folder", byCat)
		for _, f := range failures {
			t.Log("FAIL " + f)
		}
	}
	rate := float64(pass) / float64(len(cases))
	t.Logf("DMN TCK: %d/%d pass (%.1f%%), threshold %.1f%%", pass, len(cases), 100*rate, 100*tckThreshold)
	if rate < tckThreshold {
		t.Errorf("DMN TCK pass rate %.1f%% is below %.1f%%; failures:\n%s", 100*rate, 100*tckThreshold, strings.Join(failures, "\n"))
	}
}

func runCase(c tck.Case, at time.Time) (bool, string) {
	x, err := feel.Parse(c.Expr)
	if err != nil {
		return false, "parse: " + err.Error()
	}
	v, err := x.EvalAt(nil, at)
	if err != nil {
		return false, "eval: " + err.Error()
	}
	got, err := feel.MarshalJSON(v)
	if err != nil {
		return false, "json: " + err.Error()
	}
	return tck.Check(c, got)
}
