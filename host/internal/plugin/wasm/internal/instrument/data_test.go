package instrument

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
)

// seg is a data segment of a test module: active at at, or passive.
type seg struct {
	at      int32
	init    string
	passive bool
}

// dataModule is a module with one exported page of memory and segs.
func dataModule(segs []seg, dataCount bool) []byte {
	sec := func(id byte, body []byte) []byte {
		return append(appendU32([]byte{id}, uint32(len(body))), body...)
	}
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, sec(secMemory, []byte{1, 0, 1})...)
	b = append(b, sec(secExport, []byte("\x01\x06memory\x02\x00"))...)
	if dataCount {
		b = append(b, sec(secDataCount, appendU32(nil, uint32(len(segs))))...)
	}
	data := appendU32(nil, uint32(len(segs)))
	for _, s := range segs {
		if s.passive {
			data = append(data, 1)
		} else {
			data = append(appendS32(append(data, 0, 0x41), s.at), 0x0b)
		}
		data = append(appendU32(data, uint32(len(s.init))), s.init...)
	}
	return append(b, sec(secData, data)...)
}

// memoryAfterStart is the page of memory bin starts with.
func memoryAfterStart(t *testing.T, bin []byte) []byte {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := rt.NewHostModuleBuilder(ImportModule).NewFunctionBuilder().WithFunc(func() {}).Export(ImportName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := rt.Instantiate(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	mem, ok := m.Memory().Read(0, m.Memory().Size())
	if !ok {
		t.Fatal("memory unreadable")
	}
	return bytes.Clone(mem)
}

func dataSegments(t *testing.T, bin []byte) int {
	t.Helper()
	secs, err := split(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		if s.id == secData {
			r := &reader{b: s.body}
			return int(r.u32())
		}
	}
	return 0
}

// TestDataJoined: consecutive segments a short gap apart become one, and
// the module starts with the same memory; a gap another segment writes,
// a long gap, passive segments and modules that name segments (data
// count section) are left as they are.
func TestDataJoined(t *testing.T) {
	for _, tc := range []struct {
		name string
		segs []seg
		// count is the number of segments after the rewrite.
		count     int
		dataCount bool
	}{
		{"short gaps", []seg{{0, "abc", false}, {10, "def", false}, {13, "ghi", false}, {80, "jkl", false}}, 1, false},
		{"long gap", []seg{{0, "abc", false}, {3 + maxDataGap + 1, "def", false}}, 2, false},
		{"gap written before", []seg{{20, "zzzz", false}, {0, "abc", false}, {40, "def", false}, {50, "ghi", false}}, 3, false},
		{"gap written after", []seg{{0, "abc", false}, {40, "def", false}, {20, "zzzz", false}}, 3, false},
		{"overlap", []seg{{0, "abcdef", false}, {3, "XYZ", false}, {8, "q", false}}, 2, false},
		{"out of order", []seg{{100, "abc", false}, {0, "def", false}, {5, "ghi", false}}, 2, false},
		{"passive between", []seg{{0, "abc", false}, {0, "passive", true}, {5, "ghi", false}, {9, "jkl", false}}, 3, false},
		{"data count", []seg{{0, "abc", false}, {5, "ghi", false}}, 2, true},
		{"empty between", []seg{{0, "abc", false}, {4, "", false}, {6, "d", false}}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := dataModule(tc.segs, tc.dataCount)
			out, err := Instrument(in, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if got := dataSegments(t, out); got != tc.count {
				t.Errorf("%d segments after, want %d", got, tc.count)
			}
			if !bytes.Equal(memoryAfterStart(t, in), memoryAfterStart(t, out)) {
				t.Error("memory differs after the rewrite")
			}
		})
	}
}

// TestDataOutOfBounds: a segment past the memory still fails the
// instantiation once joined.
func TestDataOutOfBounds(t *testing.T) {
	in := dataModule([]seg{{65536 - 20, "abc", false}, {65536 - 2, "def", false}}, false)
	out, err := Instrument(in, 1000)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := rt.NewHostModuleBuilder(ImportModule).NewFunctionBuilder().WithFunc(func() {}).Export(ImportName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	for i, bin := range [][]byte{in, out} {
		if _, err := rt.Instantiate(ctx, bin); err == nil {
			t.Errorf("module %d: instantiated, want out of bounds", i)
		}
	}
}
