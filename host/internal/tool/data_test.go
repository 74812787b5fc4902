package tool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/tool"
	"github.com/sextant-dev/sextant/plugins/records"
	"github.com/sextant-dev/sextant/sdk"
)

// TestPluginData: a plugin source's data file is read when the source
// starts and its text reaches every call in config.data, beside the
// block's own config; a data file that went missing fails the start,
// naming it.
func TestPluginData(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "orders.json"), []byte(`[{"id":"A1","status":"lost"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(context.Context, string) (sdk.Tool, func(context.Context) error, error) {
		return records.New(), nil, nil
	}
	set := func(src pipeline.ToolSource) *tool.Set {
		s := tool.NewSet(&pipeline.Pipeline{Dir: dir, Tools: map[string]pipeline.ToolSource{"shop": src}}, tool.Options{OpenPlugin: open})
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	s := set(pipeline.ToolSource{Use: records.Name, Data: "data/orders.json", Config: map[string]any{"kinds": []any{"refund"}}})
	res, err := s.Call(ctx, "shop", "get", json.RawMessage(`{"id":"A1"}`))
	if err != nil || res.Content != `{"id":"A1","status":"lost"}` {
		t.Fatalf("get = %+v, %v", res, err)
	}
	res, err = s.Call(ctx, "shop", "submit", json.RawMessage(`{"id":"A1","kind":"cancel"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content, "accepted: refund") {
		t.Fatalf("submit of a kind the config refuses = %+v, %v", res, err)
	}
	err = set(pipeline.ToolSource{Use: records.Name, Data: "data/gone.json"}).Start(ctx, "shop")
	if err == nil || !strings.Contains(err.Error(), "tools.shop: start: data: ") || !strings.Contains(err.Error(), "gone.json") {
		t.Fatalf("missing data: %v", err)
	}
}
