package process

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
)

// swapStarts is how many plugin starts the swap test makes.
const swapStarts = 200

// TestChecksumSwap: while a goroutine swaps the pinned binary's path by
// rename between the pinned plugin and another one, every start either runs
// the pinned plugin or fails with a checksum error; the other plugin never
// answers. What it asserts holds whatever the interleaving.
func TestChecksumSwap(t *testing.T) {
	for _, mode := range []struct {
		name  string
		memfd bool
		n     int
	}{{"memfd", true, swapStarts}, {"tempcopy", false, swapStarts / 4}} {
		t.Run(mode.name, func(t *testing.T) {
			if !mode.memfd {
				old := useMemfd
				useMemfd = false
				t.Cleanup(func() { useMemfd = old })
			}
			swapTest(t, mode.n)
		})
	}
}

func swapTest(t *testing.T, starts int) {
	pinned := plugintest.Native(t, misbehavePkg)
	other := plugintest.Native(t, echoPkg)
	sum := plugintest.SHA256(t, pinned)

	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	copyFile(t, pinned, good)
	copyFile(t, other, bad)
	path := filepath.Join(dir, "plugin")
	if err := os.Link(good, path); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmp := filepath.Join(dir, "next")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			src := good
			if i%2 == 0 {
				src = bad
			}
			os.Remove(tmp)
			if err := os.Link(src, tmp); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Error(err)
				return
			}
			swaps.Add(1)
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()

	ctx := context.Background()
	now, cancel := context.WithCancel(ctx)
	cancel() // Close with an ended context kills at once: faster than a graceful stop
	var ran, refused int
	for i := 0; i < starts; i++ {
		p, err := Open(ctx, Config{
			Name: "misbehave", Command: []string{path}, SHA256: sum,
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			if !errors.Is(err, ErrChecksum) {
				t.Fatalf("start %d: %v (want a run of the pinned binary or a checksum error)", i, err)
			}
			refused++
			continue
		}
		info, err := plugin.Describe(ctx, "misbehave", p)
		p.Close(now)
		if err != nil {
			t.Fatalf("start %d: describe: %v", i, err)
		}
		if info.Name != "misbehave" {
			t.Fatalf("start %d: the unverified binary ran: it describes itself as %q", i, info.Name)
		}
		ran++
	}
	t.Logf("%d starts: %d ran the pinned binary, %d refused (checksum); %d swaps", starts, ran, refused, swaps.Load())
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
