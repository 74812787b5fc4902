package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/navigators/dmn"
	"github.com/sextant-dev/sextant/navigators/dmn/tck"
	"github.com/sextant-dev/sextant/navigators/feel"
)

// TestDecideTCK runs a sample of the DMN TCK decision results through the
// real binary, `sextant decide --json`, with the case's inputs as a JSON
// file. The binary must print the JSON the dmn package gives for the same
// JSON inputs, and its pass rate against the expected values is reported.
// Every result runs with SEXTANT_TCK_ALL=1; otherwise every eighth.
func TestDecideTCK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sextant")
	}
	root, err := tck.Locate(".")
	if errors.Is(err, tck.ErrAbsent) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	suites, err := tck.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	step := 8
	if os.Getenv("SEXTANT_TCK_ALL") != "" {
		step = 1
	}
	bin := plugintest.Native(t, "cmd/sextant")
	dir := t.TempDir()
	type job struct {
		suite tck.Suite
		c     tck.Case
		r     tck.Result
		input string
	}
	var jobs []job
	n := 0
	for _, s := range suites {
		for _, c := range s.Cases {
			for _, r := range c.Results {
				n++
				if n%step != 0 {
					continue
				}
				in, err := feel.MarshalJSON(inputsContext(c.Inputs))
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(dir, "input"+itoa(len(jobs))+".json")
				if err := os.WriteFile(p, in, 0o600); err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, job{s, c, r, p})
			}
		}
	}
	var mu sync.Mutex
	pass := 0
	work := make(chan job)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				ok := checkDecideCase(t, bin, j.suite, j.c, j.r, j.input)
				mu.Lock()
				if ok {
					pass++
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	rate := float64(pass) / float64(len(jobs))
	t.Logf("sextant decide: %d/%d sampled TCK decision results pass (%.1f%%)", pass, len(jobs), 100*rate)
	if rate < 0.90 {
		t.Errorf("sextant decide passes %.1f%% of the sampled TCK results, below 90%%", 100*rate)
	}
}

// parsedModel loads each model once for the whole test.
func parsedModel(path string) (*dmn.Model, error) {
	modelsMu.Lock()
	defer modelsMu.Unlock()
	if e, ok := models[path]; ok {
		return e.m, e.err
	}
	m, err := dmn.ParseFile(path)
	models[path] = modelEntry{m, err}
	return m, err
}

type modelEntry struct {
	m   *dmn.Model
	err error
}

var (
	modelsMu sync.Mutex
	models   = map[string]modelEntry{}
)

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func inputsContext(in map[string]any) *feel.Context {
	c := feel.NewContext()
	for k, v := range in {
		c.Put(k, v)
	}
	return c
}

// checkDecideCase runs one result through the binary and compares it with
// the package's answer for the same JSON inputs and with the expected
// value.
func checkDecideCase(t *testing.T, bin string, s tck.Suite, c tck.Case, r tck.Result, input string) bool {
	name := r.Name
	if c.Service != "" {
		name = c.Service
	}
	cmd := exec.Command(bin, "decide", s.Model, "--decision", name, "--input", input, "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	data, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	var inputs map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&inputs); err != nil {
		t.Fatal(err)
	}
	var want any
	m, pkgErr := parsedModel(s.Model)
	if pkgErr == nil {
		want, pkgErr = m.Evaluate(context.Background(), name, inputs)
	}
	if (runErr != nil) != (pkgErr != nil) {
		t.Errorf("%s #%s %s: sextant decide: %v %s; package: %v", s.Name, c.ID, r.Name, runErr, stderr.String(), pkgErr)
		return false
	}
	if runErr != nil {
		var ee *exec.ExitError
		if !errors.As(runErr, &ee) || ee.ExitCode() != ExitInvalid && ee.ExitCode() != ExitFailed {
			t.Errorf("%s #%s %s: sextant decide: %v", s.Name, c.ID, r.Name, runErr)
		}
		ok, _ := tck.Check(r, nil, pkgErr)
		return ok
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, stdout.Bytes()); err != nil {
		t.Errorf("%s #%s: sextant decide printed invalid JSON %q: %v", s.Name, c.ID, stdout.String(), err)
		return false
	}
	pkgJSON, _ := feel.MarshalJSON(want)
	if !bytes.Equal(compact.Bytes(), pkgJSON) {
		t.Errorf("%s #%s %s: sextant decide printed %s, the package gives %s", s.Name, c.ID, r.Name, compact.Bytes(), pkgJSON)
	}
	got := compact.Bytes()
	if c.Service != "" {
		if ctx, ok := want.(*feel.Context); ok {
			if x, ok := ctx.Get(r.Name); ok {
				got, _ = feel.MarshalJSON(x)
			}
		}
	}
	ok, _ := tck.CheckJSON(r, got)
	return ok
}
