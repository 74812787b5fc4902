//go:build unix

package failpoint

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestHelperProcess is the child of TestHit: it passes through point "a"
// five times, printing each pass, unless a failpoint kills it first.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("FAILPOINT_HELPER") != "1" {
		t.Skip("helper process for TestHit")
	}
	for i := 1; i <= 5; i++ {
		Hit("other")
		Hit("a")
		fmt.Printf("passed a %d\n", i)
	}
	os.Exit(0)
}

// TestHit runs a real child process and checks that it dies by SIGKILL at
// exactly the armed pass, and runs to the end when nothing is armed.
func TestHit(t *testing.T) {
	tests := []struct {
		name, env string
		passed    int  // passes printed
		killed    bool // died by SIGKILL
		exit      int
	}{
		{name: "unarmed", env: "", passed: 5},
		{name: "other point", env: "b:1", passed: 5},
		{name: "first pass", env: "a:1", passed: 0, killed: true},
		{name: "third pass", env: "a:3", passed: 2, killed: true},
		{name: "beyond the last pass", env: "a:6", passed: 5},
		{name: "malformed", env: "a", passed: 0, exit: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
			cmd.Env = append(os.Environ(), "FAILPOINT_HELPER=1", Env+"="+tt.env)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if got := strings.Count(string(out), "passed a"); got != tt.passed {
				t.Errorf("passes = %d, want %d\n%s", got, tt.passed, out)
			}
			var ee *exec.ExitError
			switch {
			case tt.killed:
				ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
				if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
					t.Errorf("process ended with %v, want killed by SIGKILL\n%s", err, stderr.String())
				}
			case tt.exit != 0:
				if !errors.As(err, &ee) || ee.ExitCode() != tt.exit {
					t.Errorf("process ended with %v, want exit %d", err, tt.exit)
				}
			case err != nil:
				t.Errorf("process ended with %v, want success\n%s", err, stderr.String())
			}
		})
	}
}
