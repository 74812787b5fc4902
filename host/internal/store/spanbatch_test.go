package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// writeLayout4 writes a store as layout 4 did: every span an entry of
// its own (spanBatch 1 is that code path) and m/meta saying 4. It holds
// task "old" with 12 spans: 10 appended in one burst, 2 with a
// checkpoint.
func writeLayout4(t *testing.T, dir string) {
	t.Helper()
	defer func(n int) { spanBatch = n }(spanBatch)
	spanBatch = 1
	ctx := context.Background()
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	_, e := seed(t, s, "old", 10)
	spans := []Span{stepSpan("old", e.ID, 10), stepSpan("old", e.ID, 11)}
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: "old", Execution: e.ID, Step: 1, State: []byte(`{}`)}, spans...))
	meta, err := s.encode(storeMeta{Layout: 4})
	must(t, err)
	must(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(keyMeta), meta) }))
	must(t, s.Close())
}

func stepSpan(task, exec string, i int) Span {
	return Span{Task: task, Execution: exec, Name: fmt.Sprintf("step %d", i), Kind: SpanInternal,
		Start: t0.Add(time.Duration(i) * time.Millisecond), End: t0.Add(time.Duration(i+1) * time.Millisecond),
		Attributes: Attributes{"n": Int(int64(i))}}
}

// spanEntries counts an execution's span entries and those that are
// batches.
func spanEntries(t *testing.T, s *Store, task, exec string) (entries, batches int) {
	t.Helper()
	must(t, s.scan(context.Background(), spanPrefix(task, exec), func(key, val []byte) error {
		entries++
		if isBatch(val[1:]) {
			batches++
		}
		return nil
	}))
	return entries, batches
}

func wantSeqs(t *testing.T, spans []Span, n int) {
	t.Helper()
	if len(spans) != n {
		t.Fatalf("%d spans, want %d", len(spans), n)
	}
	for i, sp := range spans {
		if sp.Seq != uint64(i+1) || sp.Task == "" || sp.Execution == "" || sp.SpanID == "" {
			t.Fatalf("span %d: %+v", i, sp)
		}
	}
}

// TestSpanBatchOpensLayout4 opens a layout-4 store written by the
// single-span code path: its spans read as they are (Spans, Tree,
// Export), the writer marks it layout 6, and new spans of the same
// execution follow as batches.
func TestSpanBatchOpensLayout4(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	writeLayout4(t, dir)

	ro, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	spans, err := ro.Spans(ctx, "old", "old-e1")
	must(t, err)
	wantSeqs(t, spans, 12)
	must(t, ro.Close())

	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	defer s.Close()
	var m storeMeta
	must(t, s.db.View(func(txn *badger.Txn) error { return get(txn, []byte(keyMeta), &m) }))
	if m.Layout != layoutVersion {
		t.Fatalf("layout %d after a writer opened a layout-4 store, want %d", m.Layout, layoutVersion)
	}
	if n, b := spanEntries(t, s, "old", "old-e1"); n != 12 || b != 0 {
		t.Fatalf("layout-4 store: %d span entries, %d batches; want 12, 0", n, b)
	}
	more := []Span{stepSpan("old", "old-e1", 12), stepSpan("old", "old-e1", 13), stepSpan("old", "old-e1", 14)}
	must(t, s.AppendSpans(ctx, more))
	if n, b := spanEntries(t, s, "old", "old-e1"); n != 13 || b != 1 {
		t.Fatalf("after a burst: %d span entries, %d batches; want 13, 1", n, b)
	}
	tr, err := s.Tree(ctx, "old")
	must(t, err)
	wantSeqs(t, tr.Executions[0].Spans, 15)
	if got := tr.Executions[0].Spans[13].Name; got != "step 13" {
		t.Fatalf("span 14 is %q", got)
	}
	var out bytes.Buffer
	n, err := s.Export(ctx, &out, ExportOptions{})
	must(t, err)
	if n.Spans != 15 || bytes.Count(out.Bytes(), []byte(`"type":"span"`)) != 15 {
		t.Fatalf("export counts %d spans:\n%s", n.Spans, out.Bytes())
	}
	// The export of a batch reads back as the spans it holds.
	dst := openTest(t)
	_, err = dst.Import(ctx, bytes.NewReader(out.Bytes()), "export.jsonl")
	must(t, err)
	got, err := dst.Spans(ctx, "old", "old-e1")
	must(t, err)
	wantSeqs(t, got, 15)
	for i := range got {
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(tr.Executions[0].Spans[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("span %d after import:\n got %s\nwant %s", i+1, a, b)
		}
	}
}

// TestSpanBatchWrites checks what a burst becomes: batches of up to
// spanBatch fresh spans, one entry for a lone span, and seqs that number
// on after a reopen (from the batch's key, its last seq).
func TestSpanBatchWrites(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	seed(t, s, "t1", spanBatch+6)
	if n, b := spanEntries(t, s, "t1", "t1-e1"); n != 2 || b != 2 {
		t.Fatalf("%d span entries, %d batches; want 2, 2", n, b)
	}
	must(t, s.AppendSpans(ctx, []Span{stepSpan("t1", "t1-e1", 0)}))
	if n, b := spanEntries(t, s, "t1", "t1-e1"); n != 3 || b != 2 {
		t.Fatalf("%d span entries, %d batches; want 3, 2", n, b)
	}
	must(t, s.Close())
	s, err = Open(ctx, dir, testConfig())
	must(t, err)
	defer s.Close()
	next := []Span{stepSpan("t1", "t1-e1", 0), stepSpan("t1", "t1-e1", 1)}
	must(t, s.AppendSpans(ctx, next))
	if next[0].Seq != uint64(spanBatch+8) {
		t.Fatalf("after reopen the next span is seq %d, want %d", next[0].Seq, spanBatch+8)
	}
	spans, err := s.Spans(ctx, "t1", "t1-e1")
	must(t, err)
	wantSeqs(t, spans, spanBatch+9)
}

// TestSpanRewrite writes spans again over batches, as a retried
// StageSpans or RecordRun does: each replaces its copy where it is, and no
// seq is stored twice.
func TestSpanRewrite(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	seed(t, s, "t1", 10) // one batch, seqs 1 to 10
	again := func(seq uint64, name string) Span {
		sp := stepSpan("t1", "t1-e1", int(seq))
		sp.Seq, sp.Name = seq, name
		return sp
	}
	// Inside the batch, its last span, and past it.
	must(t, s.StageSpans(ctx, []Span{again(4, "four"), again(10, "ten"), again(11, "eleven")}))
	// Through Checkpoint, with a fresh span after a rewritten one.
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: "t1", Execution: "t1-e1", Step: 1, State: []byte(`{}`)},
		again(1, "one"), again(12, "twelve"), again(13, "thirteen")))
	spans, err := s.Spans(ctx, "t1", "t1-e1")
	must(t, err)
	wantSeqs(t, spans, 13)
	for seq, name := range map[int]string{1: "one", 4: "four", 10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen", 5: "step"} {
		if spans[seq-1].Name != name {
			t.Errorf("span %d is %q, want %q", seq, spans[seq-1].Name, name)
		}
	}
	if n, _ := spanEntries(t, s, "t1", "t1-e1"); n != 3 { // 1–10, 11, 12–13
		t.Errorf("%d span entries, want 3", n)
	}
}

// TestSpanBatchDamaged reads batches the store did not write as they
// should be: a DamageError, never a panic or a wrong span.
func TestSpanBatchDamaged(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, js string }{
		{"not JSON", `[{"seq":1,`},
		{"out of order", `[{"seq":2,"name":"a"},{"seq":1,"name":"b"}]`},
		{"past the key", `[{"seq":1,"name":"a"},{"seq":3,"name":"b"}]`},
		{"short of the key", `[{"seq":1,"name":"a"}]`},
		{"no seq", `[{"name":"a"},{"seq":2,"name":"b"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t)
			seed(t, s, "t1", 0)
			key := spanKeyInto(nil, "t1", "t1-e1", 2)
			must(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set(key, append([]byte{schemaVersion}, tc.js...)) }))
			_, err := s.Spans(ctx, "t1", "t1-e1")
			if d := (*DamageError)(nil); !errors.As(err, &d) || d.Task != "t1" {
				t.Fatalf("Spans: %v, want a DamageError of t1", err)
			}
			if tc.name == "no seq" || tc.name == "not JSON" {
				err := s.scan(ctx, spanPrefix("t1", "t1-e1"), func(key, val []byte) error {
					return eachSpanJSON(key, val, func(uint64, []byte) error { return nil })
				})
				if d := (*DamageError)(nil); !errors.As(err, &d) {
					t.Fatalf("eachSpanJSON: %v, want a DamageError", err)
				}
			}
		})
	}
}

// writeIDsStore writes the same spans into the store at dir with span
// entries of the given layout: 5 keeps every id, 6 leaves out those
// derived from the key. Its task "ids" has a burst of batches, spans
// with ids the writer chose, a link, a checkpoint's spans, a span
// written again, a second execution and a reward aimed at a derived
// span id.
func writeIDsStore(t *testing.T, dir string, layout int) {
	t.Helper()
	defer func(v bool) { implicitIDs = v }(implicitIDs)
	implicitIDs = layout >= 6
	ctx := context.Background()
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	_, e := seed(t, s, "ids", spanBatch+6)
	chosen := stepSpan("ids", e.ID, 0)
	chosen.TraceID, chosen.SpanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	linked := stepSpan("ids", e.ID, 0)
	linked.SpanID = SpanIDFor("ids", e.ID, 99) // derived, but another seq's
	linked.Links = []Link{{TraceID: chosen.TraceID, SpanID: chosen.SpanID, Attributes: Attributes{"k": String("v")}}}
	must(t, s.AppendSpans(ctx, []Span{chosen, linked, stepSpan("ids", e.ID, 0)}))
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: "ids", Execution: e.ID, Step: 1, State: []byte(`{}`)},
		stepSpan("ids", e.ID, 0), stepSpan("ids", e.ID, 0)))
	again := stepSpan("ids", e.ID, 0)
	again.Seq, again.Name = 5, "written again"
	must(t, s.AppendSpans(ctx, []Span{again}))
	e2 := &Execution{Task: "ids", ID: "ids-e2", Mode: "live"}
	must(t, s.CreateExecution(ctx, e2))
	must(t, s.AppendSpans(ctx, []Span{stepSpan("ids", e2.ID, 0), stepSpan("ids", e2.ID, 1)}))
	must(t, s.AddReward(ctx, &Reward{Task: "ids", Value: 1, SpanID: SpanIDFor("ids", e.ID, 7)}))
	must(t, s.AddReward(ctx, &Reward{Task: "ids", Value: 1, SpanID: SpanIDFor("ids", e2.ID, 2)}))
	meta, err := s.encode(storeMeta{Layout: layout})
	must(t, err)
	must(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(keyMeta), meta) }))
	must(t, s.Close())
}

// readAll is what every reader of spans makes of task "ids": its tree,
// its spans, the JSONL export and the OTLP export.
func readAll(t *testing.T, s *Store) []byte {
	t.Helper()
	ctx := context.Background()
	tr, err := s.Tree(ctx, "ids")
	must(t, err)
	out, err := json.Marshal(tr)
	must(t, err)
	for _, exec := range []string{"ids-e1", "ids-e2"} {
		spans, err := s.Spans(ctx, "ids", exec)
		must(t, err)
		js, err := json.Marshal(spans)
		must(t, err)
		out = append(append(out, '\n'), js...)
	}
	var b bytes.Buffer
	_, err = s.Export(ctx, &b, ExportOptions{})
	must(t, err)
	_, err = s.ExportOTLP(ctx, &b, OTLPOptions{})
	must(t, err)
	return append(out, b.Bytes()...)
}

// TestLayout5ReadsAsLayout6: a store whose span entries keep every id
// (layout 5) reads exactly as one that leaves out the derived ids
// (layout 6) written with the same calls, through every reader; the
// latter's entries do leave them out, and a writer marks a layout-5
// store 6 and writes on.
func TestLayout5ReadsAsLayout6(t *testing.T) {
	ctx := context.Background()
	dir5, dir6 := filepath.Join(t.TempDir(), "5"), filepath.Join(t.TempDir(), "6")
	writeIDsStore(t, dir5, 5)
	writeIDsStore(t, dir6, 6)
	var reads [2][]byte
	var traceIDs [2]int
	for i, dir := range []string{dir5, dir6} {
		s, err := Open(ctx, dir, testConfig().WithReadOnly(true))
		must(t, err)
		reads[i] = readAll(t, s)
		must(t, s.scan(ctx, taskSub("ids", subSpan), func(key, val []byte) error {
			traceIDs[i] += bytes.Count(val, []byte(`"trace_id":`))
			return nil
		}))
		must(t, s.Close())
	}
	if !bytes.Equal(reads[0], reads[1]) {
		t.Fatalf("layout 5 reads as\n%s\nlayout 6 as\n%s", reads[0], reads[1])
	}
	// 77 spans of which one chose its trace id; the link's is in both.
	if traceIDs[0] != 78 || traceIDs[1] != 2 {
		t.Fatalf("trace ids stored: %d in layout 5, %d in layout 6; want 78, 2", traceIDs[0], traceIDs[1])
	}
	s, err := Open(ctx, dir5, testConfig())
	must(t, err)
	defer s.Close()
	var m storeMeta
	must(t, s.db.View(func(txn *badger.Txn) error { return get(txn, []byte(keyMeta), &m) }))
	if m.Layout != layoutVersion {
		t.Fatalf("layout %d after a writer opened a layout-5 store, want %d", m.Layout, layoutVersion)
	}
	must(t, s.AppendSpans(ctx, []Span{stepSpan("ids", "ids-e1", 0), stepSpan("ids", "ids-e1", 0)}))
	spans, err := s.Spans(ctx, "ids", "ids-e1")
	must(t, err)
	for _, sp := range spans[len(spans)-2:] {
		if sp.TraceID != TraceIDFor("ids", "ids-e1") || sp.SpanID != SpanIDFor("ids", "ids-e1", sp.Seq) {
			t.Fatalf("span %d written on a layout-5 store reads as %+v", sp.Seq, sp)
		}
	}
}

// TestDerivedSeqs: the seqs derivedSeqs finds are those whose derived
// span id it was given.
func TestDerivedSeqs(t *testing.T) {
	base := spanIDBase("t", "t-e1")
	for _, seq := range []uint64{1, 2, 3, 1000, 1 << 40, ^uint64(0)} {
		got := derivedSeqs(spanIDFrom(base, seq), base)
		if len(got) != 1 || got[0] != seq {
			t.Fatalf("seq %d: derivedSeqs gives %v", seq, got)
		}
	}
	if got := derivedSeqs("0000000000000001", base); len(got) != 2 || spanIDFrom(base, got[0]) != "0000000000000001" || spanIDFrom(base, got[1]) != "0000000000000001" {
		t.Fatalf("id 1: %v", got)
	}
	if got := derivedSeqs("nothex0000000000", base); got != nil {
		t.Fatalf("a bad id gives %v", got)
	}
}
