package temporaltest

import (
	"context"
	"runtime"
	"testing"
)

// TestStartRestart starts a real dev server, restarts it on its database and
// checks the namespace answers both times.
func TestStartRestart(t *testing.T) {
	s := Start(t)
	c := s.Dial(t)
	if _, err := c.CheckHealth(context.Background(), nil); err != nil {
		t.Fatalf("health: %v\n%s", err, s.Logs())
	}
	// The server's CPU time so far, which benchmarks charge per run: its
	// start alone takes some.
	if cpu, ok := s.CPU(); runtime.GOOS == "linux" && (!ok || cpu <= 0) {
		t.Errorf("server CPU %v, %v; want some", cpu, ok)
	}
	s.Restart(t)
	c2 := s.Dial(t)
	if _, err := c2.WorkflowService().DescribeNamespace(context.Background(), describe(s.Namespace)); err != nil {
		t.Fatalf("after restart: %v\n%s", err, s.Logs())
	}
}
