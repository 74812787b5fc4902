package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/navigators/feel"
	"github.com/sextant-dev/sextant/navigators/feel/tck"
)

// TestExprTCK runs DMN TCK cases through the real binary, `sextant expr
// --lang feel --json`, and requires the same JSON as the feel package gives
// in-process, and the same verdict against the expected value. Every case
// runs with SEXTANT_TCK_ALL=1; otherwise every fourth, to keep the
// process count low on a shared machine.
func TestExprTCK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sextant")
	}
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
	step := 4
	if os.Getenv("SEXTANT_TCK_ALL") != "" {
		step = 1
	}
	bin := plugintest.Native(t, "cmd/sextant")
	var mu sync.Mutex
	pass, total := 0, 0
	work := make(chan tck.Case)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				ok := checkExprCase(t, bin, c)
				mu.Lock()
				total++
				if ok {
					pass++
				}
				mu.Unlock()
			}
		}()
	}
	for i, c := range cases {
		// today() and now() differ between the two evaluations by design.
		if i%step == 0 && c.Category() != "1148-feel-now-function" && c.Category() != "1149-feel-today-function" {
			work <- c
		}
	}
	close(work)
	wg.Wait()
	t.Logf("sextant expr: %d/%d TCK cases pass (%.1f%%)", pass, total, 100*float64(pass)/float64(total))
}

// checkExprCase compares the binary's answer with the package's.
func checkExprCase(t *testing.T, bin string, c tck.Case) bool {
	cmd := exec.Command(bin, "expr", "--lang", "feel", "--json", "--", c.Expr)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	want, perr := feel.Parse(c.Expr)
	if perr != nil {
		var ee *exec.ExitError
		if !errors.As(runErr, &ee) || ee.ExitCode() != ExitInvalid || !bytes.HasPrefix(stderr.Bytes(), []byte("expr:"+perr.Error())) {
			t.Errorf("%s: package: %v; sextant expr: exit %v, stderr %q", c.ID, perr, runErr, stderr.String())
		}
		return false
	}
	if runErr != nil {
		t.Errorf("%s: sextant expr %q: %v: %s", c.ID, c.Expr, runErr, stderr.String())
		return false
	}
	v, err := want.Eval(nil)
	if err != nil {
		t.Errorf("%s: package: %v", c.ID, err)
		return false
	}
	pkgJSON, _ := feel.MarshalJSON(v)
	var compact bytes.Buffer
	if err := json.Compact(&compact, stdout.Bytes()); err != nil {
		t.Errorf("%s: sextant expr printed invalid JSON %q: %v", c.ID, stdout.String(), err)
		return false
	}
	if !bytes.Equal(compact.Bytes(), pkgJSON) {
		t.Errorf("%s: %s: sextant expr printed %s, the package gives %s", c.ID, c.Expr, compact.Bytes(), pkgJSON)
	}
	okCLI, _ := tck.Check(c, compact.Bytes())
	okPkg, _ := tck.Check(c, pkgJSON)
	if okCLI != okPkg {
		t.Errorf("%s: verdicts differ: cli %v, package %v", c.ID, okCLI, okPkg)
	}
	return okCLI
}
