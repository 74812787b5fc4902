package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// benchSpan is a typical step span: a handful of attributes, as the run
// engine writes them.
func benchSpan(task, exec string, i int) Span {
	return Span{
		Task: task, Execution: exec, Name: "llm classify", Kind: SpanClient,
		ParentSpanID: "00f067aa0ba902b7",
		Start:        t0.Add(time.Duration(i) * time.Microsecond),
		End:          t0.Add(time.Duration(i)*time.Microsecond + 800*time.Nanosecond),
		Attributes: Attributes{
			"sextant.node":             String("classify"),
			AttrGenAIOperationName:     String("chat"),
			AttrGenAIProviderName:      String("openai"),
			AttrGenAIRequestModel:      String("gpt-4o-mini"),
			AttrGenAIUsageInputTokens:  Int(412),
			AttrGenAIUsageOutputTokens: Int(37),
		},
		Status: SpanStatus{Code: CodeOK},
	}
}

// BenchmarkStore measures the store's two hot paths (DESIGN §9): writing
// span bursts (target ≥ 200 000 spans/s) and reading one task's whole
// tree (target ≤ 1 ms per task).
func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	b.Run("spans-write", func(b *testing.B) {
		s := openTest(b)
		_, e := seed(b, s, "bench", 0)
		const burst = 1000
		spans := make([]Span, burst)
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for done := 0; done < b.N; done += burst {
			n := min(burst, b.N-done)
			for i := range n {
				spans[i] = benchSpan("bench", e.ID, done+i)
			}
			if err := s.AppendSpans(ctx, spans[:n]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "spans/s")
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/span")
	})
	b.Run("task-read", func(b *testing.B) {
		s := openTest(b)
		const tasks = 200
		for i := range tasks {
			id := fmt.Sprintf("task-%03d", i)
			_, e := seed(b, s, id, 0)
			spans := make([]Span, 20)
			for j := range spans {
				spans[j] = benchSpan(id, e.ID, j)
			}
			must(b, s.AppendSpans(ctx, spans))
			must(b, s.AddReward(ctx, &Reward{Task: id, Value: 1}))
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		i := 0
		for b.Loop() {
			tr, err := s.Tree(ctx, fmt.Sprintf("task-%03d", i%tasks))
			if err != nil {
				b.Fatal(err)
			}
			if len(tr.Executions[0].Spans) != 20 {
				b.Fatalf("read %d spans", len(tr.Executions[0].Spans))
			}
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/task")
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e3, "cpu-µs/task")
	})
}

// BenchmarkCheckpoint measures a step commit (checkpoint plus the
// step's two spans) with and without waiting for fsync, and with 8
// runs checkpointing at once, where concurrent commits share an fsync.
func BenchmarkCheckpoint(b *testing.B) {
	ctx := context.Background()
	state := make([]byte, 2048)
	for i := range state {
		state[i] = 'a' + byte(i%26)
	}
	for _, bc := range []struct {
		name     string
		sync     bool
		parallel int
	}{{"sync", true, 1}, {"nosync", false, 1}, {"sync-8-runs", true, 8}} {
		b.Run(bc.name, func(b *testing.B) {
			s := openTest(b, testConfig().WithSyncCheckpoints(bc.sync))
			for i := range bc.parallel {
				seed(b, s, fmt.Sprintf("run-%d", i), 0)
			}
			b.SetParallelism(bc.parallel) // × GOMAXPROCS goroutines
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			var n atomicCounter
			b.RunParallel(func(pb *testing.PB) {
				id := fmt.Sprintf("run-%d", n.next()%bc.parallel)
				step := uint64(0)
				for pb.Next() {
					step++
					spans := []Span{benchSpan(id, id+"-e1", 0), benchSpan(id, id+"-e1", 1)}
					if err := s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: id + "-e1", Step: step, State: state}, spans...); err != nil {
						b.Error(err)
						return
					}
				}
			})
			if err := s.Sync(); err != nil { // through to the data in Badger
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "checkpoints/s")
			if cpu0 >= 0 {
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) next() int { return int(c.n.Add(1) - 1) }

// BenchmarkEncodeSpans measures the CPU part of a span burst's write:
// checking, encoding and redacting 1 000 spans (Badger's commit aside).
func BenchmarkEncodeSpans(b *testing.B) {
	s := openTest(b)
	_, e := seed(b, s, "bench", 0)
	const burst = 1000
	spans := make([]Span, burst)
	for i := range spans {
		spans[i] = benchSpan("bench", e.ID, i)
	}
	fates := make([]fate, burst)
	buf := make([]byte, 0, 600*burst)
	var kvs []kv
	b.ReportAllocs()
	for b.Loop() {
		for i := range spans {
			spans[i].Seq, spans[i].TraceID, spans[i].SpanID = 0, "", ""
		}
		if err := s.checkSpans(context.Background(), spans, fates); err != nil {
			b.Fatal(err)
		}
		var err error
		if kvs, _, err = s.encodeSpansInto(spans, fates, kvs[:0], &buf); err != nil {
			b.Fatal(err)
		}
		buf = buf[:0]
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*burst), "ns/span")
}

// BenchmarkChainRun measures the store's part of a 10-step durable run
// (chainRun: Begin, ten checkpoints, five recordings, the finish) and of
// applying it to Badger, which the store does in the background: the
// journal is applied within the timing (Sync).
func BenchmarkChainRun(b *testing.B) {
	s := openTest(b, testConfig().WithSyncCheckpoints(false))
	b.ReportAllocs()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		chainRun(b, s, fmt.Sprintf("run-%07d", i), nil)
		i++
	}
	must(b, s.Sync())
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	if cpu0 >= 0 {
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	}
}
