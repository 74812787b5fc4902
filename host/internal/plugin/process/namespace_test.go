//go:build linux

package process

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
)

// pidNS names the PID namespace pid lives in.
func pidNS(t *testing.T, pid int) string {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// TestPIDNamespace: the child runs as the init of a PID namespace of its
// own — directly when the host is root, inside a user namespace otherwise —
// and answers calls as usual.
func TestPIDNamespace(t *testing.T) {
	if noNamespaces.Load() {
		t.Skip("namespaces refused on this machine")
	}
	for _, mode := range []struct {
		name string
		user int
	}{{"host-ids", testUserNSOff}, {"user-namespace", testUserNSOn}} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.user == testUserNSOff && os.Geteuid() != 0 {
				t.Skip("not root: a PID namespace needs a user namespace")
			}
			old := testUserNS
			testUserNS = mode.user
			t.Cleanup(func() { testUserNS = old })
			p := openPlugin(t, echoPkg, nil)
			if got, self := pidNS(t, p.pid()), pidNS(t, os.Getpid()); got == self {
				t.Fatalf("plugin shares the host's PID namespace %s", self)
			}
			if _, err := plugin.Describe(context.Background(), "echo-provider", p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNamespaceFallback: where the kernel refuses the namespace, the plugin
// still starts, without one, and the host says so once.
func TestNamespaceFallback(t *testing.T) {
	oldMode, oldOff := testUserNS, noNamespaces.Load()
	testUserNS = testUserNSBroken
	t.Cleanup(func() { testUserNS = oldMode; noNamespaces.Store(oldOff) })
	noNamespaces.Store(false)
	nsWarn = sync.Once{}

	recs := newRecords()
	bin := plugintest.Native(t, echoPkg)
	for i := range 2 {
		p, err := Open(context.Background(), Config{Name: "echo-provider", Command: []string{bin}, Logger: slog.New(recs)})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if got, self := pidNS(t, p.pid()), pidNS(t, os.Getpid()); got != self {
			t.Fatalf("open %d: plugin in PID namespace %s, want the host's %s", i, got, self)
		}
		if _, err := plugin.Describe(context.Background(), "echo-provider", p); err != nil {
			t.Fatal(err)
		}
		p.Close(context.Background())
	}
	if !noNamespaces.Load() {
		t.Fatal("namespaces still on after the kernel refused them")
	}
	warned := 0
	for _, r := range recs.s.all {
		if r.Level == slog.LevelWarn && r.Message == nsRefusedMsg {
			warned++
		}
	}
	if warned != 1 {
		t.Fatalf("%d warnings about the missing namespace, want 1", warned)
	}
}
