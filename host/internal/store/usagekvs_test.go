package store

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestUsageKVsCarved checks the usage entries usageKVs carves from the
// span buffer: one per run of an execution's spans that holds calls, its
// key x/spend/<task>/<exec>/<first seq>, its value sumUsageValue's bytes,
// and none changed by the buffer growing or by appends after it (the
// buffer starts with no room, so every entry outlives a move).
func TestUsageKVsCarved(t *testing.T) {
	spans := []Span{
		{Task: "t1", Execution: "e1", Seq: 3},
		{Task: "t1", Execution: "e1", Seq: 4},
		{Task: "t1", Execution: "e1", Seq: 5},
		{Task: "t1", Execution: "e2", Seq: 1},
		{Task: "t2", Execution: "e1", Seq: 7},
		{Task: "t2", Execution: "e1", Seq: 8},
	}
	calls := []spanCall{
		{CallUsage{Seq: 3, Tokens: 10, CostUSD: 0.25}, true},
		{},
		{CallUsage{Seq: 5, Tokens: 1 << 40, CostUSD: 1e-9}, true},
		{},
		{},
		{CallUsage{Seq: 8, Tokens: 0, CostUSD: 0}, true},
	}
	key := func(task, exec string, seq uint64) []byte {
		return binary.BigEndian.AppendUint64([]byte(pSumPending+task+"/"+exec+"/"), seq)
	}
	want := []kv{
		{key("t1", "e1", 3), sumUsageValue([]CallUsage{calls[0].c, calls[2].c})},
		{key("t2", "e1", 8), sumUsageValue([]CallUsage{calls[5].c})},
	}
	lead := kv{[]byte("k"), []byte("v")}
	kvs, buf := usageKVs(spans, calls, []kv{lead}, nil)
	_ = append(buf, bytes.Repeat([]byte{0xff}, 64)...) // after the entries: must not show in them
	if len(kvs) != 1+len(want) || string(kvs[0].k) != "k" {
		t.Fatalf("usageKVs gave %d entries, want the one passed and %d", len(kvs), len(want))
	}
	for i, w := range want {
		got := kvs[1+i]
		if !bytes.Equal(got.k, w.k) || !bytes.Equal(got.v, w.v) {
			t.Errorf("entry %d = %q: %q, want %q: %q", i, got.k, got.v, w.k, w.v)
		}
		if cap(got.k) != len(got.k) || cap(got.v) != len(got.v) {
			t.Errorf("entry %d has room past its end: an append to it would write into the next", i)
		}
	}
	if kvs, _ := usageKVs(spans[1:2], calls[1:2], nil, nil); len(kvs) != 0 {
		t.Errorf("spans without calls gave %d usage entries", len(kvs))
	}
}
