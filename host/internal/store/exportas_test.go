package store

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestExportAs: a jsonl export leaves out cancelled runs unless a status
// is asked for, an otlp export writes OTLP JSON, and an unknown format
// is refused before anything is written.
func TestExportAs(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	fill(t, s)
	must(t, s.CreateTask(ctx, &Task{ID: "task-x", Pipeline: "invoices", Status: StatusCancelled, Input: json.RawMessage(`{}`)}))
	var b bytes.Buffer
	n, err := s.ExportAs(ctx, &b, ExportRequest{Format: FormatJSONL})
	must(t, err)
	if n == nil || n.Tasks != 3 || strings.Contains(b.String(), "task-x") {
		t.Errorf("jsonl export: %+v, with task-x %v; want the 3 tasks that were not cancelled", n, strings.Contains(b.String(), "task-x"))
	}
	b.Reset()
	n, err = s.ExportAs(ctx, &b, ExportRequest{Format: FormatJSONL, Query: Query{Status: StatusCancelled}})
	must(t, err)
	if n == nil || n.Tasks != 1 || !strings.Contains(b.String(), "task-x") {
		t.Errorf("jsonl export of the cancelled: %+v, want task-x", n)
	}
	b.Reset()
	n, err = s.ExportAs(ctx, &b, ExportRequest{Format: FormatOTLP})
	must(t, err)
	if n != nil || !strings.Contains(b.String(), "resourceSpans") {
		t.Errorf("otlp export: counts %+v, output %.80q", n, b.String())
	}
	b.Reset()
	if _, err := s.ExportAs(ctx, &b, ExportRequest{Format: "csv"}); err == nil || b.Len() != 0 {
		t.Errorf("csv: %v, wrote %d bytes; want an error and nothing written", err, b.Len())
	}
}
