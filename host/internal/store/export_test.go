package store

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// fill writes a small but complete store: three tasks across two
// pipelines, a live and a replay execution, spans with every attribute
// kind and a link, rewards (one aimed at a span), chat and human
// recordings, a checkpoint.
func fill(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for i, p := range []string{"email-triage", "email-triage", "invoices"} {
		id := []string{"task-a", "task-b", "task-c"}[i]
		must(t, s.CreateTask(ctx, &Task{ID: id, Pipeline: p, Input: json.RawMessage(`{"body":"mail ` + id + `"}`),
			Truth: json.RawMessage(`{"action":"archive"}`), Tags: []string{"difficulty:easy"},
			Strategy: StrategyRef{Name: "email-handler", Version: "2.0.0", Hash: "9f2c"}}))
		e := &Execution{Task: id, ID: "e1", Mode: "live", Strategy: StrategyRef{Name: "email-handler", Version: "2.0.0", Hash: "9f2c"}}
		must(t, s.CreateExecution(ctx, e))
		temp := 0.2
		req := &sdk.ChatRequest{Model: "gpt-4o-mini", Temperature: &temp, Messages: []sdk.Message{{Role: "user", Content: "classify " + id}}}
		resp := &sdk.ChatResponse{Text: `{"action":"archive","confidence":0.9}`, Usage: sdk.Usage{InputTokens: 40, OutputTokens: 9}, FinishReason: "stop", Model: "gpt-4o-mini-2024"}
		rec, err := NewChatRecording(s.Redactor(), "openai", id, req, resp, 300*time.Millisecond)
		must(t, err)
		must(t, s.PutRecording(ctx, rec))
		root := Span{Task: id, Execution: "e1", Name: "run", Start: t0, End: t0.Add(2 * time.Second),
			Attributes: Attributes{"sextant.pipeline": String(p)}}
		must(t, s.AppendSpans(ctx, []Span{root}))
		llm := Span{Task: id, Execution: "e1", ParentSpanID: SpanIDFor(id, "e1", 1), Name: ChatSpanName(req.Model), Kind: SpanClient,
			Start: t0.Add(time.Millisecond), End: t0.Add(301 * time.Millisecond),
			Attributes: ChatSpanAttributes("openai", req, resp), Status: SpanStatus{Code: CodeOK}}
		act := Span{Task: id, Execution: "e1", ParentSpanID: SpanIDFor(id, "e1", 1), Name: "action archive",
			Start: t0.Add(time.Second), End: t0.Add(time.Second + time.Millisecond),
			Attributes: Attributes{"sextant.confirmed": Bool(false), "sextant.confidence": Float(0.9), "sextant.step": Int(2)},
			Status:     SpanStatus{Code: CodeError, Message: "blocked by never_execute"}}
		must(t, s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: "e1", Step: 2, State: []byte(`{"vars":{"classify":{"action":"archive"}}}`)}, llm, act))
		must(t, s.AddReward(ctx, &Reward{Task: id, Value: 1, Tags: []string{"user"}, Note: "right call"}))
	}
	ctx2 := context.Background()
	must(t, s.SetTaskStatus(ctx2, "task-a", StatusCompleted))
	must(t, s.SetTaskStatus(ctx2, "task-b", StatusWaiting))
	must(t, s.AddReward(ctx2, &Reward{Task: "task-b", Execution: "e1", SpanID: SpanIDFor("task-b", "e1", 3), Value: -1}))
	h, err := NewHumanRecording("task-b", "confirm", 1, "Archive it?", json.RawMessage(`{"answer":"yes"}`))
	must(t, err)
	must(t, s.PutRecording(ctx2, h))
	replay := &Execution{Task: "task-a", ID: "r1", Mode: "replay", Strategy: StrategyRef{Name: "email-handler", Version: "2.1.0", Hash: "77ab"}}
	must(t, s.CreateExecution(ctx2, replay))
	must(t, s.AppendSpans(ctx2, []Span{{Task: "task-a", Execution: "r1", Name: "run", Start: t0, End: t0.Add(time.Second),
		Links: []Link{{TraceID: TraceIDFor("task-a", "e1"), SpanID: SpanIDFor("task-a", "e1", 1), Attributes: Attributes{"sextant.link": String("replays")}}}}}))
	replay.Status, replay.Ended = StatusCompleted, t0.Add(time.Second)
	must(t, s.PutExecution(ctx2, replay))
}

func export(t *testing.T, s *Store, opt ExportOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	_, err := s.Export(context.Background(), &b, opt)
	must(t, err)
	return b.Bytes()
}

func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := openTest(t)
	fill(t, src)
	for _, opt := range []ExportOptions{{}, {Checkpoints: true}} {
		first := export(t, src, opt)
		for _, seekable := range []bool{true, false} {
			dst := openTest(t)
			var r io.Reader = bytes.NewReader(first)
			if !seekable {
				r = io.MultiReader(bytes.NewReader(first))
			}
			n, err := dst.Import(ctx, r, "data.jsonl")
			must(t, err)
			want := Counts{Tasks: 3, Executions: 4, Spans: 10, Rewards: 4, Recordings: 4}
			if opt.Checkpoints {
				want.Checkpoints = 3
			}
			if n != want {
				t.Fatalf("imported %+v, want %+v", n, want)
			}
			second := export(t, dst, opt)
			if !bytes.Equal(first, second) {
				t.Fatalf("export → import → export differs:\n%s\n---\n%s", first, second)
			}
			for _, id := range []string{"task-a", "task-b", "task-c"} {
				a, err := src.Tree(ctx, id)
				must(t, err)
				b, err := dst.Tree(ctx, id)
				must(t, err)
				if !opt.Checkpoints {
					for i := range a.Executions {
						a.Executions[i].Checkpoint = nil
					}
				}
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("tree of %s differs after import", id)
				}
			}
			// The imported store keeps working: sequence numbers continue.
			more := []Span{{Task: "task-a", Execution: "e1", Name: "more", Start: t0}}
			must(t, dst.AppendSpans(ctx, more))
			if more[0].Seq != 4 {
				t.Fatalf("seq after import %d, want 4", more[0].Seq)
			}
		}
	}
}

func TestExportGolden(t *testing.T) {
	s := openTest(t)
	fill(t, s)
	golden(t, "export.jsonl", export(t, s, ExportOptions{Checkpoints: true}))

	// A filtered export carries only its tasks and their recordings.
	got := string(export(t, s, ExportOptions{Query: Query{Pipeline: "invoices"}}))
	if strings.Count(got, `"type":"task"`) != 1 || strings.Count(got, `"type":"recording"`) != 1 || strings.Contains(got, "task-a") {
		t.Fatalf("filtered export:\n%s", got)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file (run go test -update):\n%s", path, got)
	}
}

func TestImportErrors(t *testing.T) {
	ctx := context.Background()
	src := openTest(t)
	fill(t, src)
	good := strings.Split(strings.TrimSuffix(string(export(t, src, ExportOptions{})), "\n"), "\n")
	// good[0] header, good[1] task-c (newest first), then its execution…
	lineOf := func(prefix string) int {
		for i, l := range good {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		t.Fatalf("no line starting %s", prefix)
		return 0
	}
	taskLine := lineOf(`{"type":"task","id":"task-c"`)
	execLine := lineOf(`{"type":"execution","task":"task-c"`)
	spanLine := lineOf(`{"type":"span","task":"task-c"`)
	rewardB := lineOf(`{"type":"reward","task":"task-b","seq":2`)
	replace := func(i int, s string) string {
		lines := append([]string(nil), good...)
		lines[i] = s
		return strings.Join(lines, "\n") + "\n"
	}
	edit := func(i int, from, to string) string {
		if !strings.Contains(good[i], from) {
			t.Fatalf("line %d has no %q: %s", i+1, from, good[i])
		}
		return replace(i, strings.Replace(good[i], from, to, 1))
	}
	pos := func(i int) string { return "data.jsonl:" + itoa(i+1) + ": " }
	tests := []struct {
		name, input, want string
	}{
		{"invalid json", replace(taskLine, `{"type":"task",`), pos(taskLine) + "invalid JSON: unexpected end of JSON input"},
		{"no type", edit(taskLine, `"type":"task",`, ``), pos(taskLine) + `record has no "type"`},
		{"unknown type", edit(taskLine, `"type":"task"`, `"type":"tusk"`), pos(taskLine) + `unknown record type "tusk" (want header, task, execution, span, reward, checkpoint or recording)`},
		{"unknown field", edit(taskLine, `"pipeline"`, `"colour":1,"pipeline"`), pos(taskLine) + `task: json: unknown field "colour"`},
		{"header not first", replace(taskLine, good[0]), pos(taskLine) + "header must be the first line"},
		{"newer format", edit(0, `"version":1`, `"version":2`), pos(0) + "export version 2 is not supported (this sextant reads version 1)"},
		{"bad status", edit(taskLine, `"status":"running"`, `"status":"done"`), pos(taskLine) + `task "task-c": unknown status "done"`},
		{"duplicate task", replace(execLine, good[taskLine]), pos(execLine) + `task "task-c" appears twice`},
		{"span without execution", edit(spanLine, `"execution":"e1"`, `"execution":"e9"`), pos(spanLine) + `execution "e9" of task "task-c" is neither in the input nor in the store`},
		{"span without seq", edit(spanLine, `"seq":1,`, ``), pos(spanLine) + `span of execution "e1" has no seq`},
		{"bad span id", edit(spanLine, `"span_id":"`, `"span_id":"zz`), pos(spanLine) + `span 1 of execution "e1": span id "zz` + SpanIDFor("task-c", "e1", 1) + `" must be 16 hex digits`},
		{"span year 10000", replace(spanLine, regexp.MustCompile(`"(start|end)":"[^"]*"`).ReplaceAllString(good[spanLine], `"$1":"9999-12-31T23:30:00-01:00"`)),
			pos(spanLine) + `span 1 of execution "e1": a time's year in UTC is outside 0 to 9999`},
		{"reward for a missing span", edit(rewardB, SpanIDFor("task-b", "e1", 3), "00000000000000aa"), pos(rewardB) + "reward names span 00000000000000aa, which is neither in the input nor in the store"},
		{"task not in input", strings.Join([]string{good[0], good[execLine]}, "\n"), "data.jsonl:2: task \"task-c\" is neither in the input nor in the store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := openTest(t)
			_, err := dst.Import(ctx, strings.NewReader(tt.input), "data.jsonl")
			wantErr(t, err, tt.want)
			// Nothing was written.
			if got := export(t, dst, ExportOptions{Checkpoints: true}); strings.Count(string(got), "\n") != 1 {
				t.Fatalf("a failed import wrote:\n%s", got)
			}
		})
	}

	// Importing into a store that has the tasks already.
	_, err := src.Import(ctx, strings.NewReader(strings.Join(good, "\n")), "data.jsonl")
	wantErr(t, err, "data.jsonl:"+itoa(taskLine+1)+`: task "task-c": already exists in the store`)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
