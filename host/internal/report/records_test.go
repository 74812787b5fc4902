package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/host/internal/store"
)

func TestWriteTasks(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	tasks := []store.Task{
		{ID: "a", Status: store.StatusCompleted, Pipeline: "p", Created: t0, Strategy: store.StrategyRef{Version: "1.0.0"}, Tags: []string{"x", "y"}},
		{ID: "bb", Status: store.StatusWaiting, Pipeline: "p", Created: t0, Waits: []store.Wait{{Kind: store.WaitHuman, Node: "n", Question: "q"}, {Kind: store.WaitHuman, Node: "m", Question: "r"}}},
	}
	var b bytes.Buffer
	if err := WriteTasks(&b, tasks, func(t *store.Task) string { return WaitsSummary(t.Waits) }); err != nil {
		t.Fatal(err)
	}
	want := `TASK  STATUS     PIPELINE  STRATEGY  CREATED               TAGS  WAITING FOR
a     completed  p         1.0.0     2026-01-02T02:04:05Z  x,y
bb    waiting    p                   2026-01-02T02:04:05Z    answer at n: q (+1 more)
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteStrategyLog(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b bytes.Buffer
	err := WriteStrategyLog(&b, []store.StrategyRecord{
		{Version: "1.1.0", Parent: "1.0.0", Hash: "0123456789abcdef0123", Author: "ann@box", Created: t0},
		{Version: "1.0.0", Hash: "abc", Created: t0},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `VERSION  PARENT  HASH          AUTHOR   CREATED
1.1.0    1.0.0   0123456789ab  ann@box  2026-01-02T03:04:05Z
1.0.0            abc                    2026-01-02T03:04:05Z
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestTableCellsEscaped: a task's id, pipeline, tags, detail or an
// incident's error holding a tab, newline, vertical tab, form feed, ESC or
// a byte that is not UTF-8 (0xff is tabwriter's escape) is shown escaped,
// each once, and measured as shown: every row is one line and every
// column starts where its heading does.
func TestTableCellsEscaped(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const hostile = "a\tb\nc\vd\fe\x1b[2Jf\xffg"
	const shown = `a\tb\nc\x0bd\x0ce\x1b[2Jf` + "\uFFFD" + "g"
	tasks := []store.Task{
		{ID: "t1", Status: store.StatusCompleted, Pipeline: "p", Created: t0, Tags: []string{"x"}},
		{ID: "t2" + hostile, Status: store.StatusIncident, Pipeline: "p" + hostile, Created: t0, Tags: []string{hostile},
			Incident: &store.Incident{Kind: "tool", Node: "n" + hostile, Error: "boom" + hostile}},
	}
	var b bytes.Buffer
	if err := WriteTasks(&b, tasks, func(t *store.Task) string { return "d" + hostile }); err != nil {
		t.Fatal(err)
	}
	aligned(t, "WriteTasks", b.String(), 3, "CREATED", "2026-01-02T03:04:05Z", shown)
	b.Reset()
	if err := WriteIncidents(&b, tasks); err != nil {
		t.Fatal(err)
	}
	aligned(t, "WriteIncidents", b.String(), 3, "ERROR", "boom", shown)
}

// aligned checks out is lines rows long, that on its last row the column
// headed head starts with cell where the heading does, and that shown
// appears, escaped once.
func aligned(t *testing.T, writer, out string, lines int, head, cell, shown string) {
	t.Helper()
	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(rows) != lines {
		t.Fatalf("%s: %d lines, want %d:\n%s", writer, len(rows), lines, out)
	}
	col := utf8.RuneCountInString(rows[0][:strings.Index(rows[0], head)])
	if r := []rune(rows[len(rows)-1]); len(r) < col || !strings.HasPrefix(string(r[col:]), cell) {
		t.Errorf("%s: column %s does not start at %d on its last row:\n%s", writer, head, col, out)
	}
	if !strings.Contains(out, shown) || strings.Contains(out, `\\`) || strings.ContainsAny(out, "\x1b\v\f") || strings.IndexByte(out, 0xff) >= 0 {
		t.Errorf("%s: want %q escaped once:\n%s", writer, shown, out)
	}
}
