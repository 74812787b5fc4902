package records_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/plugins/records"
	"github.com/sextant-dev/sextant/sdk"
)

const ordersTOML = `
[[record]]
id = "A1"
customer = "Ana Ruiz"
status = "lost"
total = 42.5
items = [{ sku = "MUG-1", name = "Blue mug" }]

[[record]]
id = "A2"
customer = "Ben Ode"
status = "delivered"
total = 120
`

const ordersJSON = `[{"id":"A1","customer":"Ana Ruiz","status":"lost","total":42.50,"items":[{"sku":"MUG-1","name":"Blue mug"}]},
{"id":"A2","customer":"Ben Ode","status":"delivered","total":120}]`

func call(t *testing.T, p *records.Records, cfg map[string]any, name, args string) (*sdk.ToolResult, error) {
	t.Helper()
	return p.CallTool(context.Background(), &sdk.ToolCallRequest{Name: name, Arguments: json.RawMessage(args), Config: cfg})
}

func tomlCfg() map[string]any {
	return map[string]any{sdk.ToolConfigData: ordersTOML, sdk.ToolConfigDataFile: "data/orders.toml"}
}

// TestTables: the same answers from a TOML file, a JSON file, a JSON
// object holding records, and records in the block itself.
func TestTables(t *testing.T) {
	inline := []any{
		map[string]any{"id": "A1", "customer": "Ana Ruiz", "status": "lost", "total": 42.5, "items": []any{map[string]any{"sku": "MUG-1", "name": "Blue mug"}}},
		map[string]any{"id": "A2", "customer": "Ben Ode", "status": "delivered", "total": 120},
	}
	cfgs := map[string]map[string]any{
		"toml":   tomlCfg(),
		"json":   {sdk.ToolConfigData: ordersJSON, sdk.ToolConfigDataFile: "orders.json"},
		"object": {sdk.ToolConfigData: `{"records":` + ordersJSON + `}`, sdk.ToolConfigDataFile: "orders.json"},
		"inline": {"records": inline},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			p := records.New()
			res, err := call(t, p, cfg, "get", `{"id":"A1"}`)
			if err != nil || res.IsError {
				t.Fatalf("get: %v %+v", err, res)
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(res.Content), &rec); err != nil || rec["status"] != "lost" || rec["total"] != 42.5 {
				t.Fatalf("get A1 = %s (%v)", res.Content, err)
			}
			for _, c := range []struct{ args, want string }{
				{`{"query":"ana LOST"}`, `"total":1`},
				{`{"query":"blue mug"}`, `"id":"A1"`},                            // nested values
				{`{"query":"mug","field":"items"}`, `"total":1`},                 // a.b under field
				{`{"query":"ana","field":"status"}`, `{"records":[],"total":0}`}, // not in that field
				{`{"query":"o","limit":1}`, `"total":2`},
			} {
				res, err := call(t, p, cfg, "search", c.args)
				if err != nil || res.IsError || !strings.Contains(res.Content, c.want) {
					t.Errorf("search %s = %+v, %v; want %s", c.args, res, err, c.want)
				}
			}
			res, _ = call(t, p, cfg, "search", `{"query":"o","limit":1}`)
			var page struct{ Records []json.RawMessage }
			if json.Unmarshal([]byte(res.Content), &page); len(page.Records) != 1 {
				t.Errorf("limit 1 gave %d records", len(page.Records))
			}
		})
	}
}

func TestToolFailures(t *testing.T) {
	p := records.New()
	cfg := tomlCfg()
	for _, c := range []struct{ tool, args, want string }{
		{"get", `{"id":"Z9"}`, `no record with id "Z9"`},
		{"search", `{"query":"  "}`, "query is empty"},
		{"search", `{"query":"a","limit":500}`, "limit must be 1 to 100"},
		{"submit", `{"id":"Z9","kind":"refund"}`, `no record with id "Z9"`},
		{"submit", `{"id":"A1","kind":"refund","details":[1]}`, "details must be a JSON object"},
	} {
		res, err := call(t, p, cfg, c.tool, c.args)
		if err != nil || !res.IsError || !strings.Contains(res.Content, c.want) {
			t.Errorf("%s %s = %+v, %v; want a tool error %q", c.tool, c.args, res, err, c.want)
		}
	}
	cfg["kinds"] = []any{"refund", "replacement"}
	res, err := call(t, p, cfg, "submit", `{"id":"A1","kind":"cancel"}`)
	if err != nil || !res.IsError || !strings.Contains(res.Content, `"cancel" are not accepted here (accepted: refund, replacement)`) {
		t.Errorf("submit of a kind not accepted = %+v, %v", res, err)
	}
}

func TestSubmitReceipt(t *testing.T) {
	p := records.New()
	cfg := tomlCfg()
	a, err := call(t, p, cfg, "submit", `{"id":"A1","kind":"refund","note":"lost","details":{"currency":"EUR","amount":42.5}}`)
	if err != nil || a.IsError {
		t.Fatalf("submit: %+v, %v", a, err)
	}
	// Key order in details does not change the request.
	b, _ := call(t, p, cfg, "submit", `{"id":"A1","kind":"refund","note":"lost","details":{"amount":42.5,"currency":"EUR"}}`)
	c, _ := call(t, p, cfg, "submit", `{"id":"A1","kind":"refund","note":"lost, twice"}`)
	if a.Content != b.Content || a.Content == c.Content {
		t.Errorf("receipts: %q %q %q (want the first two equal, the third different)", a.Content, b.Content, c.Content)
	}
	if !strings.HasPrefix(a.Content, "filed refund request REQ-") || !strings.HasSuffix(a.Content, " for id A1") {
		t.Errorf("receipt = %q", a.Content)
	}
	var rc map[string]any
	if err := json.Unmarshal(a.Structured, &rc); err != nil || rc["record"] != "A1" || rc["kind"] != "refund" {
		t.Errorf("structured = %s (%v)", a.Structured, err)
	}
}

// TestBadTables: a table the plugin cannot read fails the call (an
// error, not a tool result), naming the file and the record.
func TestBadTables(t *testing.T) {
	for _, c := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{}, "no table"},
		{map[string]any{sdk.ToolConfigData: "[[record]]\nid = 1\n[[record]]\nid = 1\n", sdk.ToolConfigDataFile: "t.toml"}, `t.toml: record 2: id "1" is also record 1's`},
		{map[string]any{sdk.ToolConfigData: "[[record]]\nname = \"x\"\n", sdk.ToolConfigDataFile: "t.toml"}, "t.toml: record 1: no id"},
		{map[string]any{sdk.ToolConfigData: "[[record]]\nid = 1.5\n", sdk.ToolConfigDataFile: "t.toml"}, "t.toml: record 1: no id"},
		{map[string]any{sdk.ToolConfigData: "other = 1\n", sdk.ToolConfigDataFile: "t.toml"}, `t.toml: unknown key "other"`},
		{map[string]any{sdk.ToolConfigData: "[[record]\n", sdk.ToolConfigDataFile: "t.toml"}, "t.toml: "},
		{map[string]any{sdk.ToolConfigData: `{"rows":[]}`, sdk.ToolConfigDataFile: "t.json"}, `t.json: want an array of records`},
		{map[string]any{sdk.ToolConfigData: `[1]`, sdk.ToolConfigDataFile: "t.json"}, `t.json: records[0]: a record is an object`},
		{map[string]any{sdk.ToolConfigData: `[] []`, sdk.ToolConfigDataFile: "t.json"}, `more than one JSON value`},
		{map[string]any{sdk.ToolConfigData: `[]`, "records": []any{}}, "both data"},
	} {
		_, err := call(t, records.New(), c.cfg, "get", `{"id":"1"}`)
		var e *sdk.Error
		if !errors.As(err, &e) || e.Code != sdk.CodeInvalid || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want invalid %q", c.cfg, err, c.want)
		}
	}
	// An integer key is read from a string or a number argument.
	cfg := map[string]any{sdk.ToolConfigData: "[[record]]\nid = 7\n", sdk.ToolConfigDataFile: "t.toml"}
	for _, args := range []string{`{"id":"7"}`, `{"id":7}`} {
		if res, err := call(t, records.New(), cfg, "get", args); err != nil || res.IsError {
			t.Errorf("get %s = %+v, %v", args, res, err)
		}
	}
	if _, err := call(t, records.New(), cfg, "nope", `{}`); err == nil || !strings.Contains(err.Error(), `no tool "nope"`) {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := call(t, records.New(), cfg, "get", `"not an object"`); err == nil {
		t.Error("arguments that are no object: no error")
	}
}

// TestListTools: the list is valid for every provider and stable.
func TestListTools(t *testing.T) {
	specs, err := records.New().ListTools(context.Background())
	if err != nil || len(specs) != 3 {
		t.Fatalf("ListTools = %v, %v", specs, err)
	}
	for _, s := range specs {
		if !sdk.ValidToolName(s.Name) || !json.Valid(s.InputSchema) || s.Annotations == nil {
			t.Errorf("tool %+v", s)
		}
	}
	if ro := specs[2].Annotations; *ro.ReadOnly || *ro.Idempotent {
		t.Error("submit must be neither read-only nor idempotent")
	}
}
