package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestSpanSequence(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	_, e := seed(t, s, "t1", 3)
	spans := []Span{
		{Task: "t1", Execution: e.ID, Name: "a", Start: t0},
		{Task: "t1", Execution: e.ID, Seq: 10, Name: "b", Start: t0},
		{Task: "t1", Execution: e.ID, Name: "c", Start: t0},
	}
	must(t, s.AppendSpans(ctx, spans))
	if spans[0].Seq != 4 || spans[1].Seq != 10 || spans[2].Seq != 11 {
		t.Fatalf("seqs %d %d %d, want 4 10 11", spans[0].Seq, spans[1].Seq, spans[2].Seq)
	}
	if spans[0].TraceID != TraceIDFor("t1", e.ID) || spans[0].SpanID != SpanIDFor("t1", e.ID, 4) {
		t.Fatalf("derived ids not filled: %+v", spans[0])
	}
	must(t, s.Close())

	// A new process continues after the last stored span.
	s, err = Open(ctx, dir, testConfig())
	must(t, err)
	defer s.Close()
	more := []Span{{Task: "t1", Execution: e.ID, Name: "d", Start: t0}}
	must(t, s.AppendSpans(ctx, more))
	if more[0].Seq != 12 {
		t.Fatalf("seq after reopen %d, want 12", more[0].Seq)
	}
	got, err := s.Spans(ctx, "t1", e.ID)
	must(t, err)
	var seqs []uint64
	for _, sp := range got {
		seqs = append(seqs, sp.Seq)
	}
	if want := []uint64{1, 2, 3, 4, 10, 11, 12}; len(seqs) != len(want) {
		t.Fatalf("seqs %v, want %v", seqs, want)
	} else {
		for i := range want {
			if seqs[i] != want[i] {
				t.Fatalf("seqs %v, want %v", seqs, want)
			}
		}
	}
	// Re-writing a seq replaces the span: resuming a step is idempotent.
	must(t, s.AppendSpans(ctx, []Span{{Task: "t1", Execution: e.ID, Seq: 4, Name: "a2", Start: t0}}))
	got, err = s.Spans(ctx, "t1", e.ID)
	must(t, err)
	if len(got) != 7 || got[3].Name != "a2" {
		t.Fatalf("rewrite: %d spans, seq 4 named %q", len(got), got[3].Name)
	}
}

func TestSpanLargeBurst(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	_, e := seed(t, s, "t1", 0)
	spans := make([]Span, 1000) // several pipelined transactions
	for i := range spans {
		spans[i] = benchSpan("t1", e.ID, i)
	}
	must(t, s.AppendSpans(ctx, spans))
	got, err := s.Spans(ctx, "t1", e.ID)
	must(t, err)
	if len(got) != 1000 || got[999].Seq != 1000 {
		t.Fatalf("%d spans, last seq %d", len(got), got[len(got)-1].Seq)
	}
}

func TestSpanRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	_, e := seed(t, s, "t1", 0)
	temp := 0.2
	in := Span{
		Task: "t1", Execution: e.ID, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7",
		ParentSpanID: "00f067aa0ba902b8", Name: "chat gpt-4o-mini <&>", Kind: SpanClient,
		Start: t0.Add(time.Nanosecond), End: t0.Add(time.Second),
		Attributes: Attributes{
			"s": String("line\nbreak \"quoted\" \u2028 é"), "i": Int(-42), "f": Float(3), "g": Float(temp),
			"b": Bool(true), "l": Strings("stop", "length"), "empty": Strings(),
		},
		Status: SpanStatus{Code: CodeError, Message: "timeout"},
		Links:  []Link{{TraceID: "4bf92f3577b34da6a3ce929d0e0e4737", SpanID: "00f067aa0ba902b9", Attributes: Attributes{"k": Int(1)}}},
	}
	batch := []Span{in}
	must(t, s.AppendSpans(ctx, batch))
	got, err := s.Spans(ctx, "t1", e.ID)
	must(t, err)
	// The hand-written encoder must agree with encoding/json.
	a, _ := json.Marshal(batch[0])
	b, _ := json.Marshal(got[0])
	if string(a) != string(b) {
		t.Fatalf("round trip\n got: %s\nwant: %s", b, a)
	}
	if got[0].Attributes["f"].Kind() != KindFloat || got[0].Attributes["i"].Kind() != KindInt {
		t.Fatal("int/float kinds lost")
	}
}

func TestSpanErrors(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	_, e := seed(t, s, "t1", 0)
	ok := func() Span { return Span{Task: "t1", Execution: e.ID, Seq: 7, Name: "n", Start: t0} }
	with := func(f func(*Span)) Span { sp := ok(); f(&sp); return sp }
	tests := []struct {
		name string
		span Span
		want string
	}{
		{"no execution", with(func(sp *Span) { sp.Execution = "nope" }), `write spans: execution "nope" of task "t1": not found`},
		{"bad task id", with(func(sp *Span) { sp.Task = "" }), `write spans: task id is empty`},
		{"bad trace id", with(func(sp *Span) { sp.TraceID = "xyz" }), `write spans: span 7 of execution "t1-e1": trace id "xyz" must be 32 hex digits`},
		{"zero span id", with(func(sp *Span) { sp.SpanID = "0000000000000000" }), `write spans: span 7 of execution "t1-e1": span id is all zeros`},
		{"upper-case parent", with(func(sp *Span) { sp.ParentSpanID = "00F067AA0BA902B7" }), `write spans: span 7 of execution "t1-e1": parent span id "00F067AA0BA902B7" must be 16 lower-case hex digits`},
		{"no name", with(func(sp *Span) { sp.Name = "" }), `write spans: span 7 of execution "t1-e1": name is empty`},
		{"bad kind", with(func(sp *Span) { sp.Kind = "rpc" }), `write spans: span 7 of execution "t1-e1": unknown kind "rpc"`},
		{"bad code", with(func(sp *Span) { sp.Status.Code = "fine" }), `write spans: span 7 of execution "t1-e1": unknown status code "fine"`},
		{"no start", with(func(sp *Span) { sp.Start = time.Time{} }), `write spans: span 7 of execution "t1-e1": start time is missing`},
		{"year 10000", with(func(sp *Span) { sp.Start = time.Date(9999, 12, 31, 23, 30, 0, 0, time.FixedZone("west", -3600)) }),
			`write spans: span 7 of execution "t1-e1": a time's year in UTC is outside 0 to 9999`},
		{"end year 10000", with(func(sp *Span) { sp.End = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }),
			`write spans: span 7 of execution "t1-e1": a time's year in UTC is outside 0 to 9999`},
		{"backwards", with(func(sp *Span) { sp.End = t0.Add(-time.Second) }), `write spans: span 7 of execution "t1-e1": ends before it starts`},
		{"nil attribute", with(func(sp *Span) { sp.Attributes = Attributes{"x": {}} }), `write spans: span 7 of execution "t1-e1": attribute "x" has no value`},
		{"nan", with(func(sp *Span) { sp.Attributes = Attributes{"x": Float(nan())} }), `write spans: span 7 of execution "t1-e1": attribute "x": NaN and infinite floats cannot be stored`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, s.AppendSpans(ctx, []Span{tt.span}), tt.want)
		})
	}
	// A bad span in a burst writes none of it.
	burst := make([]Span, 600)
	for i := range burst {
		burst[i] = Span{Task: "t1", Execution: e.ID, Name: "n", Start: t0}
	}
	burst[599].Name = ""
	if err := s.AppendSpans(ctx, burst); err == nil {
		t.Fatal("no error")
	}
	got, err := s.Spans(ctx, "t1", e.ID)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("%d spans written from a bad burst", len(got))
	}
}

func nan() float64 { var z float64; return z / z }

func TestExecutions(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	seed(t, s, "t1", 0)
	e := &Execution{Task: "t1"}
	must(t, s.CreateExecution(ctx, e))
	if len(e.ID) != 26 || e.TraceID != TraceIDFor("t1", e.ID) || e.Status != StatusRunning {
		t.Fatalf("defaults: %+v", e)
	}
	e.Status, e.Ended, e.Error = StatusFailed, t0.Add(time.Hour), "provider: timeout"
	must(t, s.PutExecution(ctx, e))
	got, err := s.Execution(ctx, "t1", e.ID)
	must(t, err)
	if got.Status != StatusFailed || got.Error != "provider: timeout" || !got.Ended.Equal(e.Ended) {
		t.Fatalf("got %+v", got)
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"exists", s.CreateExecution(ctx, &Execution{Task: "t1", ID: e.ID}), `write execution "` + e.ID + `": already exists`},
		{"no task", s.CreateExecution(ctx, &Execution{Task: "t9", ID: "e"}), `write execution "e": task "t9": not found`},
		{"bad mode", s.CreateExecution(ctx, &Execution{Task: "t1", ID: "e", Mode: "dry"}), `write execution: execution "e": unknown mode "dry" (want live or replay)`},
		{"bad trace", s.PutExecution(ctx, &Execution{Task: "t1", ID: "e", TraceID: "1"}), `write execution: execution "e": trace id "1" must be 32 hex digits`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantErr(t, tt.err, tt.want) })
	}
	_, err = s.Execution(ctx, "t1", "nope")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

func TestTree(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	_, e1 := seed(t, s, "t1", 2)
	seed(t, s, "t10", 1) // a task whose id extends t1's must not leak into its tree
	e2 := &Execution{Task: "t1", ID: "t1-e2", Mode: "replay"}
	must(t, s.CreateExecution(ctx, e2))
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: "t1", Execution: e2.ID, Step: 1, State: []byte(`{"vars":{}}`)},
		Span{Task: "t1", Execution: e2.ID, Name: "s", Start: t0}))
	spans, err := s.Spans(ctx, "t1", e1.ID)
	must(t, err)
	must(t, s.AddReward(ctx, &Reward{Task: "t1", SpanID: spans[1].SpanID, Value: 0.5, Note: "ok"}))
	rec, err := NewHumanRecording("t1", "confirm", 1, "Send it?", json.RawMessage(`{"answer":"yes"}`))
	must(t, err)
	must(t, s.PutRecording(ctx, rec))

	tr, err := s.Tree(ctx, "t1")
	must(t, err)
	if tr.Task.ID != "t1" || len(tr.Executions) != 2 || len(tr.Rewards) != 1 || len(tr.Recordings) != 1 {
		t.Fatalf("tree: task %q, %d executions, %d rewards, %d recordings", tr.Task.ID, len(tr.Executions), len(tr.Rewards), len(tr.Recordings))
	}
	x1, x2 := tr.Executions[0], tr.Executions[1]
	if x1.Execution.ID != e1.ID || len(x1.Spans) != 2 || x1.Checkpoint != nil {
		t.Fatalf("execution 1: %s, %d spans, checkpoint %v", x1.Execution.ID, len(x1.Spans), x1.Checkpoint)
	}
	if x2.Execution.ID != "t1-e2" || len(x2.Spans) != 1 || x2.Checkpoint == nil || x2.Checkpoint.Step != 1 {
		t.Fatalf("execution 2: %+v", x2)
	}
	if tr.Recordings[0] != HumanKey("t1", "confirm", 1) {
		t.Fatalf("recording link %q", tr.Recordings[0])
	}
	_, err = s.Tree(ctx, "t2")
	wantErr(t, err, `read task "t2": not found`)
}

func TestRewards(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	_, e := seed(t, s, "t1", 2)
	must(t, s.AddReward(ctx, &Reward{Task: "t1", Value: 1, Tags: []string{"user"}}))
	r := &Reward{Task: "t1", Execution: e.ID, SpanID: SpanIDFor("t1", e.ID, 2), Value: -1, Note: "wrong action"}
	must(t, s.AddReward(ctx, r))
	if r.Seq != 2 || r.Created.IsZero() {
		t.Fatalf("reward %+v", r)
	}
	got, err := s.Rewards(ctx, "t1")
	must(t, err)
	if len(got) != 2 || got[0].Value != 1 || got[1].Note != "wrong action" {
		t.Fatalf("rewards %+v", got)
	}
	tests := []struct {
		name string
		r    Reward
		want string
	}{
		{"no task", Reward{Task: "t9", Value: 1}, `add reward to task "t9": task "t9": not found`},
		{"no span", Reward{Task: "t1", SpanID: "00f067aa0ba902b7", Value: 1}, `add reward to task "t1": span 00f067aa0ba902b7: not found`},
		{"bad span id", Reward{Task: "t1", SpanID: "x", Value: 1}, `add reward: span id "x" must be 16 hex digits`},
		{"no execution", Reward{Task: "t1", Execution: "e9", Value: 1}, `add reward to task "t1": execution "e9": not found`},
		{"infinite", Reward{Task: "t1", Value: 1 / zero()}, `add reward: reward value +Inf is not a finite number`},
		{"bad tag", Reward{Task: "t1", Tags: []string{"a\tb"}}, `add reward: tag "a\tb" has a control character`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantErr(t, s.AddReward(ctx, &tt.r), tt.want) })
	}
}

func zero() float64 { return 0 }

// TestCheckpointExecution: a checkpoint and its execution's new status are
// written together, or neither is.
func TestCheckpointExecution(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	_, e := seed(t, s, "t1", 2)
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: "t1", Execution: e.ID, Step: 1, State: []byte(`{"a":1}`)}))
	end := t0.Add(time.Hour)
	root := Span{Task: "t1", Execution: e.ID, Seq: 9, Name: "run", Start: t0, End: end}
	must(t, s.CheckpointExecution(ctx, &Checkpoint{Task: "t1", Execution: e.ID, Step: 2, State: []byte(`{"a":2}`)}, func(ex *Execution) {
		ex.Status, ex.Error, ex.Ended, ex.Trace = StatusFailed, "boom", end, []string{"step s1"}
	}, root))
	ex, err := s.Execution(ctx, "t1", e.ID)
	must(t, err)
	if ex.Status != StatusFailed || ex.Error != "boom" || !ex.Ended.Equal(end) || len(ex.Trace) != 1 || ex.Strategy.Name != "email-handler" {
		t.Fatalf("execution %+v", ex)
	}
	c, err := s.LatestCheckpoint(ctx, "t1", e.ID)
	must(t, err)
	if c.Step != 2 || string(c.State) != `{"a":2}` {
		t.Fatalf("checkpoint %+v", c)
	}
	spans, err := s.Spans(ctx, "t1", e.ID)
	must(t, err)
	if len(spans) != 3 || spans[2].Seq != 9 || spans[2].Name != "run" {
		t.Fatalf("spans %+v", spans)
	}
	// An update that leaves the execution invalid writes nothing.
	err = s.CheckpointExecution(ctx, &Checkpoint{Task: "t1", Execution: e.ID, Step: 3, State: []byte(`{"a":3}`)}, func(ex *Execution) {
		ex.Status = "lost"
	}, Span{Task: "t1", Execution: e.ID, Name: "late", Start: t0})
	wantErr(t, err, `write checkpoint of execution "t1-e1": execution "t1-e1": unknown status "lost"`)
	c, err = s.LatestCheckpoint(ctx, "t1", e.ID)
	must(t, err)
	ex, err = s.Execution(ctx, "t1", e.ID)
	must(t, err)
	if spans, _ := s.Spans(ctx, "t1", e.ID); c.Step != 2 || ex.Status != StatusFailed || len(spans) != 3 {
		t.Fatalf("a refused write left checkpoint %+v, execution %+v, %d spans", c, ex, len(spans))
	}
	err = s.CheckpointExecution(ctx, &Checkpoint{Task: "t1", Execution: "e9", Step: 1}, func(*Execution) {})
	wantErr(t, err, `write checkpoint of execution "e9": execution "e9" of task "t1": not found`)
}

func TestCheckpoint(t *testing.T) {
	ctx := context.Background()
	for _, sync := range []bool{true, false} {
		s := openTest(t, testConfig().WithSyncCheckpoints(sync))
		_, e := seed(t, s, "t1", 0)
		for step := uint64(1); step <= 3; step++ {
			must(t, s.Checkpoint(ctx, &Checkpoint{Task: "t1", Execution: e.ID, Step: step, State: []byte{0, 1, byte(step)}}))
		}
		c, err := s.LatestCheckpoint(ctx, "t1", e.ID)
		must(t, err)
		if c.Step != 3 || string(c.State) != "\x00\x01\x03" {
			t.Fatalf("checkpoint %+v", c)
		}
		err = s.Checkpoint(ctx, &Checkpoint{Task: "t1", Execution: "e9", Step: 1})
		wantErr(t, err, `write checkpoint of execution "e9": execution "e9" of task "t1": not found`)
		_, err = s.LatestCheckpoint(ctx, "t1", "e9")
		wantErr(t, err, `read checkpoint of execution "e9": not found`)
	}
}
