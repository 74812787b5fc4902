// Command spawner is a process plugin that starts a grandchild: at start-up,
// before it serves, it runs `sleep 3601` through a shell that first reports
// the sleep's process id as the host's /proc sees it, and writes that id to
// the file named by $SEXTANT_TEST_GRANDCHILD_FILE. The orphan tests kill the
// host and check that the grandchild dies too.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// Spawner is a gate that passes everything; what matters is its grandchild.
type Spawner struct{}

var _ sdk.Gate = Spawner{}

// Describe implements sdk.Plugin.
func (Spawner) Describe() sdk.Info {
	return sdk.Info{Name: "spawner", Kind: sdk.KindGate, Version: "0.0.1", API: sdk.APIVersion,
		Description: "starts a grandchild that sleeps (orphan tests)"}
}

// Check implements sdk.Gate.
func (Spawner) Check(context.Context, *sdk.Comparison) (*sdk.Verdict, error) {
	return &sdk.Verdict{Ruling: sdk.Pass}, nil
}

func init() { sdk.Register(Spawner{}) }

// spawn starts the grandchild and returns its pid. The shell reads the pid
// from /proc/self/stat, which names it as the mounted /proc does — the
// host's view even when this plugin runs in a PID namespace of its own —
// and then becomes the sleep.
func spawn() (string, error) {
	cmd := exec.Command("/bin/sh", "-c", `read -r pid rest </proc/self/stat; echo "$pid"; exec sleep 3601`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read grandchild pid: %w", err)
	}
	return strings.TrimSpace(line), nil
}

func main() {
	if file := os.Getenv("SEXTANT_TEST_GRANDCHILD_FILE"); file != "" {
		pid, err := spawn()
		if err != nil {
			fmt.Fprintln(os.Stderr, "spawner:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(file, []byte(pid+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "spawner:", err)
			os.Exit(1)
		}
	}
	sdk.Main()
}
