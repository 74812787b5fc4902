package instrument

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// errStop is what the test's yield panics with to end a runaway guest.
var errStop = errors.New("stopped by yield")

// harness runs a module in wazero with the "env" imports of features.wat
// and a yield that counts its calls and, past limit, traps.
type harness struct {
	rt     wazero.Runtime
	yields int
	limit  int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := context.Background()
	h := &harness{rt: wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter()), limit: -1}
	t.Cleanup(func() { h.rt.Close(ctx) })
	_, err := h.rt.NewHostModuleBuilder("env").
		NewFunctionBuilder().WithFunc(func(a, b uint32) uint32 { return a + b }).Export("add").
		NewFunctionBuilder().WithFunc(func(a uint32) uint32 { return 2 * a }).Export("twice").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The global import: a host module cannot export globals, so a tiny
	// wasm module does.
	g := []byte("\x00asm\x01\x00\x00\x00" +
		"\x06\x06\x01\x7f\x00\x41\x05\x0b" + // global i32 (i32.const 5)
		"\x07\x05\x01\x01g\x03\x00") // export "g" global 0
	gm, err := h.rt.CompileModule(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.rt.InstantiateModule(ctx, gm, wazero.NewModuleConfig().WithName("envg")); err != nil {
		t.Fatal(err)
	}
	_, err = h.rt.NewHostModuleBuilder(ImportModule).
		NewFunctionBuilder().WithFunc(func() {
		h.yields++
		if h.limit >= 0 && h.yields > h.limit {
			panic(errStop)
		}
	}).Export(ImportName).Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// instantiate compiles and instantiates bin.
func (h *harness) instantiate(t *testing.T, bin []byte) api.Module {
	t.Helper()
	ctx := context.Background()
	c, err := h.rt.CompileModule(ctx, bin)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	m, err := h.rt.InstantiateModule(ctx, c, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	return m
}

func call(t *testing.T, m api.Module, name string, args ...uint64) uint64 {
	t.Helper()
	res, err := m.ExportedFunction(name).Call(context.Background(), args...)
	if err != nil {
		t.Fatalf("%s%v: %v", name, args, err)
	}
	if len(res) == 0 {
		return 0
	}
	return res[0]
}

// TestSameResults runs every export of features.wat before and after the
// rewrite: renumbered calls, tables, element segments, funcref globals,
// ref.func and the start function must give the same answers.
func TestSameResults(t *testing.T) {
	orig := readTestdata(t, "features.wasm")
	inst, err := Instrument(orig, 1000)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		fn   string
		args []uint64
	}{
		{"loop", []uint64{100}},
		{"table", []uint64{0, 41}},
		{"table", []uint64{1, 41}},
		{"table", []uint64{2, 41}},
		{"table", []uint64{3, 9}},
		{"fref", []uint64{41}},
		{"refsq", []uint64{12}},
		{"count", nil},
		{"twice_sq", []uint64{3}},
		{"fib", []uint64{15}},
		{"multi", []uint64{50}},
	}
	h1, h2 := newHarness(t), newHarness(t)
	m1, m2 := h1.instantiate(t, orig), h2.instantiate(t, inst)
	for _, tc := range cases {
		want := call(t, m1, tc.fn, tc.args...)
		if got := call(t, m2, tc.fn, tc.args...); got != want {
			t.Errorf("%s%v = %d instrumented, %d before", tc.fn, tc.args, got, want)
		}
	}
	if h1.yields != 0 {
		t.Errorf("the original module yielded %d times", h1.yields)
	}
	if h2.yields == 0 {
		t.Error("the instrumented module never yielded")
	}
}

// TestYieldCount checks the interval: a loop of n iterations plus its
// function's entry (the function does not start with a loop) passes
// n+1 loop headers and one entry.
func TestYieldCount(t *testing.T) {
	for _, tc := range []struct {
		interval int32
		n        uint64
		want     int
	}{
		{1, 10, 12},
		{10, 99, 10}, // 101 checks
		{1000, 9998, 10},
		{1000, 9997, 9},
	} {
		inst, err := Instrument(readTestdata(t, "features.wasm"), tc.interval)
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t)
		m := h.instantiate(t, inst)
		h.yields = 0
		call(t, m, "loop", tc.n)
		// Each iteration also enters $inc through call_indirect: one more
		// check per iteration.
		checks := int(tc.n+1) + 1 + int(tc.n)
		if want := checks / int(tc.interval); h.yields != want {
			t.Errorf("interval %d, loop(%d): %d yields, want %d", tc.interval, tc.n, h.yields, want)
		}
	}
}

// TestRunawayStops: an endless loop and a loop-free exponential recursion
// both reach the yield, which stops them.
func TestRunawayStops(t *testing.T) {
	for _, fn := range []string{"spin", "fib"} {
		t.Run(fn, func(t *testing.T) {
			inst, err := Instrument(readTestdata(t, "features.wasm"), 1000)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t)
			m := h.instantiate(t, inst)
			h.yields, h.limit = 0, 5
			var args []uint64
			if fn == "fib" {
				args = []uint64{60}
			}
			_, err = m.ExportedFunction(fn).Call(context.Background(), args...)
			if err == nil || !strings.Contains(err.Error(), errStop.Error()) {
				t.Fatalf("%s: %v, want the yield's panic", fn, err)
			}
		})
	}
}

// TestCreatesSections: modules lacking the type, import or global section
// get them, in order.
func TestCreatesSections(t *testing.T) {
	for name, bin := range map[string][]byte{
		"empty":     []byte("\x00asm\x01\x00\x00\x00"),
		"noimports": readTestdata(t, "noimports.wasm"),
	} {
		t.Run(name, func(t *testing.T) {
			inst, err := Instrument(bin, 3)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t)
			m := h.instantiate(t, inst)
			if f := m.ExportedFunction("spin"); f != nil {
				h.limit = 2
				if _, err := f.Call(context.Background()); err == nil {
					t.Fatal("spin returned")
				}
			}
		})
	}
}

// TestCommittedPlugins: the .wasm test plugins written by hand compile
// after the rewrite. (The Go-built plugins go through it in every test of
// package wasm.)
func TestCommittedPlugins(t *testing.T) {
	files, err := filepath.Glob("../../../../../../testdata/plugins/*/*.wasm")
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed plugins: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			bin, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := Instrument(bin, 1000)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			rt := wazero.NewRuntime(ctx)
			defer rt.Close(ctx)
			if _, err := rt.CompileModule(ctx, inst); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMalformed: bad input is an error naming the problem, never a panic
// and never output.
func TestMalformed(t *testing.T) {
	good := readTestdata(t, "features.wasm")
	hdr := "\x00asm\x01\x00\x00\x00"
	for _, tc := range []struct {
		name, bin, want string
	}{
		{"empty", "", "no \\0asm magic"},
		{"magic", "\x00wasm\x01\x00\x00", "no \\0asm magic"},
		{"version", "\x00asm\x02\x00\x00\x00", "binary format version"},
		{"section past end", hdr + "\x01\x05\x01", "past the end"},
		{"unknown section", hdr + "\x0e\x00", "unknown section id 14"},
		{"order", hdr + "\x03\x01\x00\x01\x01\x00", "out of order"},
		{"long leb", hdr + "\x01\xff\xff\xff\xff\xff\x01", "too long"},
		{"leb too large", hdr + "\x01\xff\xff\xff\xff\x7f", "too large"},
		{"import kind", hdr + "\x02\x05\x01\x00\x00\x09\x00", "unknown kind 0x9"},
		{"no end", hdr + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x05\x01\x03\x00\x01\x01", "without end"},
		{"opcode", hdr + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x05\x01\x03\x00\xff\x0b", "unsupported opcode 0xff"},
		// global.get 0 in a module with no globals: valid once the
		// counter is added, so it must be refused.
		{"counter reach", hdr + "\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x07\x01\x05\x00\x23\x00\x1a\x0b", "global index 0 out of range"},
		{"counter export", hdr + "\x07\x05\x01\x01g\x03\x00", "global index 0 out of range"},
		{"truncated", string(good[:len(good)-3]), "past the end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Instrument([]byte(tc.bin), 1000)
			if err == nil || out != nil {
				t.Fatalf("got %d bytes, err %v; want an error", len(out), err)
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %q, want ErrMalformed containing %q", err, tc.want)
			}
		})
	}
	if _, err := Instrument(good, 0); err == nil {
		t.Fatal("interval 0 accepted")
	}
}

// FuzzInstrument: whatever the bytes, an error or a module, never a
// panic; and when the rewriter and wazero accept the input, wazero accepts
// the output too.
func FuzzInstrument(f *testing.F) {
	f.Add(readTestdata(f, "features.wasm"))
	f.Add(readTestdata(f, "noimports.wasm"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	if b, err := os.ReadFile("../../../../../../testdata/plugins/wat-gate/gate.wasm"); err == nil {
		f.Add(b)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, bin []byte) {
		w := &rewriter{interval: 1000}
		// The unrecovered path: a panic here is a bug even though
		// Instrument would turn it into an error.
		secs, err := split(bin)
		if err == nil {
			if err = w.scan(secs); err == nil {
				_, err = w.emit(secs)
			}
		}
		out, err2 := Instrument(bin, 1000)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Instrument and the unrecovered path disagree: %v / %v", err2, err)
		}
		if err != nil {
			// Not compiled with wazero: some tiny invalid inputs take
			// wazero's compiler tens of seconds (see the wasmfast note).
			return
		}
		c, cerr := rt.CompileModule(ctx, bin)
		if cerr != nil {
			return
		}
		c.Close(ctx)
		c2, err := rt.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("wazero compiles the input but not the output: %v", err)
		}
		c2.Close(ctx)
	})
}
