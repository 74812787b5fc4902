package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/sdk"
)

// openEcho opens one of the bare-ABI echo modules of testdata.
func openEcho(tb testing.TB, file string) *Module {
	tb.Helper()
	m, err := Open(context.Background(), Config{Name: "echo", Path: filepath.Join("testdata", file), Logger: (&logBuffer{}).logger()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// guestCounter reads the echo module's count of buffer requests.
func guestCounter(t *testing.T, m *Module) uint64 {
	t.Helper()
	inst := <-m.pool
	defer func() { m.pool <- inst }()
	res, err := inst.mod.ExportedFunction("sextant_requests").Call(inst.callCtx)
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// TestRequestBuffer: with sextant_request the host asks for a buffer only
// when the one it has is too small (at least 4 KiB, doubling), so a call
// is one export call; with sextant_alloc (the first hosts' ABI, still
// served) it asks on every call.
func TestRequestBuffer(t *testing.T) {
	sizes := []int{10, 1000, 4096, 5000, 100, 8192, 8193}
	for _, tc := range []struct {
		file string
		want uint64
	}{
		{"echo-request.wasm", 3}, // 4 KiB, then 8 KiB for 5000, then 16 KiB for 8193
		{"echo-alloc.wasm", uint64(len(sizes))},
	} {
		t.Run(tc.file, func(t *testing.T) {
			m := openEcho(t, tc.file)
			for _, n := range sizes {
				req := bytes.Repeat([]byte{byte(n)}, n)
				got, err := m.RoundTrip(t.Context(), req)
				if err != nil {
					t.Fatalf("%d bytes: %v", n, err)
				}
				if !bytes.Equal(got, req) {
					t.Fatalf("%d bytes: echo of %d bytes differs", n, len(got))
				}
			}
			if got := guestCounter(t, m); got != tc.want {
				t.Errorf("%d buffer requests for %d calls, want %d", got, len(sizes), tc.want)
			}
		})
	}
}

// TestSharedCompiled: a second Open of the same file in the process uses
// the compiled module of the first; Release frees it once no Module uses
// it, and the next Open compiles again.
func TestSharedCompiled(t *testing.T) {
	a, b := openEcho(t, "echo-request.wasm"), openEcho(t, "echo-request.wasm")
	if a.compiled != b.compiled {
		t.Fatal("two Opens of one file compiled it twice")
	}
	if err := Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := openEcho(t, "echo-request.wasm")
	if c.compiled != a.compiled {
		t.Fatal("Release freed a compiled module in use")
	}
	for _, m := range []*Module{a, b, c} {
		m.Close(t.Context())
	}
	if err := Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	d := openEcho(t, "echo-request.wasm")
	if d.compiled == a.compiled {
		t.Fatal("Release kept a compiled module no Module uses")
	}
	if _, err := d.RoundTrip(t.Context(), []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// TestCloseStopsRunaway: Close ends a call whose guest loops forever,
// long before its deadline. The test waits for the guest's first deadline
// check (testHookYield) instead of sleeping.
func TestCloseStopsRunaway(t *testing.T) {
	path := root("testdata/plugins/misbehave-wat/misbehave.wasm")
	m, c := open(t, "misbehave-wat", path, Config{CallTimeout: time.Hour})
	looping := make(chan struct{})
	var once sync.Once
	testHookYield = func() { once.Do(func() { close(looping) }) }
	t.Cleanup(func() { testHookYield = nil })
	errc := make(chan error, 1)
	go func() {
		_, err := c.IO(context.Background(), &sdk.IORequest{})
		errc <- err
	}()
	select {
	case <-looping:
	case err := <-errc:
		t.Fatalf("the call returned before looping: %v", err)
	}
	if err := m.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A hang here is the failure; the generous bound only ends it.
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("err = %v, want ErrClosed", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close did not stop the looping guest")
	}
}

// TestGoPluginOneCall: the Go SDK's guest has sextant_request, and its
// buffer survives from call to call.
func TestGoPluginOneCall(t *testing.T) {
	path := plugintest.Wasm(t, "testdata/plugins/echo-provider")
	m, c := open(t, "echo-provider", path, Config{})
	if !m.request {
		t.Fatal("the Go guest lacks sextant_request")
	}
	var ptr uint32
	for i := range 3 {
		if _, err := c.Chat(t.Context(), &sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: "hello"}}}); err != nil {
			t.Fatal(err)
		}
		inst := <-m.pool
		p := inst.reqPtr
		m.pool <- inst
		if i > 0 && p != ptr {
			t.Fatalf("call %d: request buffer moved from %#x to %#x", i, ptr, p)
		}
		ptr = p
	}
	var _ plugin.Conn = m
}

// BenchmarkRoundTrip is the transport alone: 1 KiB each way through the
// ABI, with the deadline armed, over both buffer ABIs.
func BenchmarkRoundTrip(b *testing.B) {
	req := bytes.Repeat([]byte("sextant "), 128)
	for _, file := range []string{"echo-request.wasm", "echo-alloc.wasm"} {
		b.Run(file[:len(file)-len(".wasm")], func(b *testing.B) {
			m := openEcho(b, file)
			ctx := context.Background()
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			cpu := threadCPU()
			for i := 0; i < b.N; i++ {
				if _, err := m.RoundTrip(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(threadCPU()-cpu)/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}

// TestReopenSeesChange: a second Open skips reading a file it compiled
// only while the file is unchanged; a replaced file is read, hashed and
// checked against the manifest again.
func TestReopenSeesChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.wasm")
	first, err := os.ReadFile(filepath.Join("testdata", "echo-request.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(filepath.Join("testdata", "echo-alloc.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(first)
	pin := hex.EncodeToString(sum[:])
	if err := os.WriteFile(path, first, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second Open takes the remembered sum
		m, err := Open(t.Context(), Config{Name: "p", Path: path, SHA256: pin})
		if err != nil {
			t.Fatal(err)
		}
		m.Close(t.Context())
	}
	if err := os.WriteFile(path, second, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), Config{Name: "p", Path: path, SHA256: pin})
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("Open of the replaced file: %v, want ErrChecksum", err)
	}
	m, err := Open(t.Context(), Config{Name: "p", Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(t.Context())
	if m.request {
		t.Fatal("Open used the module compiled from the file's old contents")
	}
}

// TestCacheRecordsSum: with a cache directory, a new process (Release
// frees everything in memory, as one would start with nothing) opening an
// unchanged file reads neither it nor hashes it; a replaced file is read
// and checked against the manifest again.
func TestCacheRecordsSum(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no file identity here: every Open reads the file")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.wasm")
	cache := filepath.Join(dir, "cache")
	first, err := os.ReadFile(filepath.Join("testdata", "echo-request.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(filepath.Join("testdata", "echo-alloc.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(first)
	pin := hex.EncodeToString(sum[:])
	if err := os.WriteFile(path, first, 0o644); err != nil {
		t.Fatal(err)
	}
	reads := 0
	testHookReadModule = func(string) { reads++ }
	defer func() { testHookReadModule = nil }()
	for i := range 2 {
		if err := Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		m, err := Open(t.Context(), Config{Name: "p", Path: path, SHA256: pin, CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		m.Close(t.Context())
		if reads != 1 {
			t.Fatalf("open %d: the file was read %d times, want once in all", i+1, reads)
		}
	}
	if err := os.WriteFile(path, second, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), Config{Name: "p", Path: path, SHA256: pin, CacheDir: cache})
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("Open of the replaced file: %v, want ErrChecksum", err)
	}
	if reads != 2 {
		t.Fatalf("the replaced file was read %d times in all, want 2", reads)
	}
}
