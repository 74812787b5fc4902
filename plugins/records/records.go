// Package records is sextant's first-party tool plugin over a table of
// records: an agent looks records up (an order, a customer, a product, a
// policy) and files requests about them (a refund, a replacement, an
// escalation), offline, with nothing else installed.
//
// A [tools.NAME] block names the table's file; the host reads it and sends
// its text with every call (in the config, under "data"), so the plugin
// works unchanged linked in, as a process plugin or as a wasm module,
// which has no filesystem:
//
//	[tools.shop]
//	use = "records"
//	data = "data/orders.toml"          # .toml ([[record]] tables) or .json
//	config = { key = "id", kinds = ["refund", "replacement"] }
//
// The file is TOML with one [[record]] table per record, or JSON: an array
// of objects, or an object whose "records" member is one. Every record
// has a key (the field config.key names, default "id": a string or an
// integer), unique in the table. A small table may instead live in the
// block itself: config = { records = [{ id = "A1", ... }] }.
//
// Tools (a step selects them as shop.search, shop.get, shop.submit):
//
//   - search {query, field?, limit?}: the records holding every word of
//     query (case-insensitive, anywhere in their values, or in field
//     only), in file order, at most limit (default 10, at most 100).
//     Read-only.
//   - get {id}: the record with that key, as JSON. Read-only.
//   - submit {id, kind, note?, details?}: files a request of kind about a
//     record and answers a receipt whose request id is derived from what
//     was asked (the same request, the same id). config.kinds, when set,
//     lists the kinds accepted. submit is not idempotent, so a call cut
//     off by a crash waits for a person, and it changes nothing itself:
//     the filed request is the run's recording of the call, which `sextant
//     show --full` prints and `sextant export` hands to whoever carries it
//     out. To act on a live system, point a source with the same tool
//     names at an MCP server or a plugin of your own.
//
// A tool's own failure (no such record, a kind not accepted) is a result
// marked as an error, which the model is shown; a table the plugin cannot
// read fails the call, naming the file and what is wrong.
package records

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/sdk"
)

// Name is the plugin's name.
const Name = "records"

// Records is the records tool plugin. It caches parsed tables by content.
type Records struct {
	mu    sync.Mutex
	cache map[[32]byte]*table
}

var _ sdk.Tool = (*Records)(nil)

// New returns a records plugin.
func New() *Records { return &Records{cache: map[[32]byte]*table{}} }

func init() { sdk.Register(New()) }

// Describe implements sdk.Plugin.
func (*Records) Describe() sdk.Info {
	return sdk.Info{Name: Name, Kind: sdk.KindTool, Version: "1.0.0", API: sdk.APIVersion,
		Description: "look up and search a table of records, and file requests about them",
		Config: []sdk.ConfigField{
			{Name: "key", Type: "string", Default: "id", Doc: "the field holding each record's key"},
			{Name: "kinds", Type: "list", Doc: "the request kinds submit accepts (default: any)"},
			{Name: "records", Type: "any", Doc: "the records themselves, for a table small enough to live in the pipeline (instead of data)"},
		}}
}

var yes, no = true, false

// Tools is what ListTools returns.
var Tools = []sdk.ToolSpec{
	{Name: "search", Description: "Finds the records holding every word of the query (case-insensitive), in the table's order.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"words every matching record holds"},` +
			`"field":{"type":"string","description":"look only in this field"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":100,"description":"at most this many records (default 10)"}},` +
			`"required":["query"],"additionalProperties":false}`),
		Annotations: &sdk.ToolAnnotations{ReadOnly: &yes, Idempotent: &yes, Destructive: &no}},
	{Name: "get", Description: "Returns the record with this key, as JSON.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"the record's key"}},` +
			`"required":["id"],"additionalProperties":false}`),
		Annotations: &sdk.ToolAnnotations{ReadOnly: &yes, Idempotent: &yes, Destructive: &no}},
	{Name: "submit", Description: "Files a request of some kind (for example a refund) about a record and returns its receipt.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"the key of the record the request is about"},` +
			`"kind":{"type":"string","description":"what is requested, for example refund"},` +
			`"note":{"type":"string","description":"why, in a sentence"},` +
			`"details":{"type":"object","description":"anything else the request needs, for example an amount"}},` +
			`"required":["id","kind"],"additionalProperties":false}`),
		Annotations: &sdk.ToolAnnotations{ReadOnly: &no, Idempotent: &no, Destructive: &no}},
}

// ListTools implements sdk.Tool.
func (*Records) ListTools(context.Context) ([]sdk.ToolSpec, error) { return Tools, nil }

// CallTool implements sdk.Tool.
func (p *Records) CallTool(_ context.Context, r *sdk.ToolCallRequest) (*sdk.ToolResult, error) {
	switch r.Name {
	case "search", "get", "submit":
	default:
		return nil, sdk.Errorf(sdk.CodeBadRequest, "records: no tool %q (the tools are search, get and submit)", r.Name)
	}
	var args struct {
		Query   string          `json:"query"`
		Field   string          `json:"field"`
		Limit   *int            `json:"limit"`
		ID      json.RawMessage `json:"id"`
		Kind    string          `json:"kind"`
		Note    string          `json:"note"`
		Details json.RawMessage `json:"details"`
	}
	if err := json.Unmarshal(r.Arguments, &args); err != nil {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "records: %s: arguments are not a JSON object of the tool's schema: %v", r.Name, err)
	}
	t, err := p.table(r.Config)
	if err != nil {
		return nil, err
	}
	switch r.Name {
	case "search":
		limit := 10
		if args.Limit != nil {
			limit = *args.Limit
		}
		if limit < 1 || limit > 100 {
			return fail("limit must be 1 to 100, got %d", limit), nil
		}
		return t.search(args.Query, args.Field, limit), nil
	case "get":
		id, ok := keyArg(args.ID)
		if !ok {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "records: get wants {\"id\": \"…\"}")
		}
		i, ok := t.byKey[id]
		if !ok {
			return fail("no record with %s %q", t.key, id), nil
		}
		return &sdk.ToolResult{Content: string(t.json[i])}, nil
	default:
		return t.submit(args.ID, args.Kind, args.Note, args.Details, kinds(r.Config))
	}
}

// keyArg reads a key the model wrote as a string or a number.
func keyArg(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&n) == nil {
		return n.String(), true
	}
	return "", false
}

func fail(format string, args ...any) *sdk.ToolResult {
	return &sdk.ToolResult{Content: fmt.Sprintf(format, args...), IsError: true}
}

// table is one parsed table of records.
type table struct {
	key   string
	recs  []map[string]any
	json  [][]byte // each record as JSON (keys sorted)
	text  []string // each record's values, lowercased, one per line, for search
	byKey map[string]int
}

// maxCached bounds the parsed tables kept: a long-lived plugin serving
// many pipelines does not grow without end.
const maxCached = 16

func (p *Records) table(cfg map[string]any) (*table, error) {
	key := "id"
	if k, ok := cfg["key"].(string); ok && k != "" {
		key = k
	}
	file, _ := cfg[sdk.ToolConfigDataFile].(string)
	text, hasText := cfg[sdk.ToolConfigData].(string)
	inline, hasInline := cfg["records"]
	var sum [32]byte
	switch {
	case hasText && hasInline:
		return nil, sdk.Errorf(sdk.CodeInvalid, "records: both data (%s) and config.records are set: keep one", file)
	case hasText:
		sum = sha256.Sum256([]byte(key + "\x00" + file + "\x00" + text))
	case hasInline:
		b, err := json.Marshal(inline)
		if err != nil {
			return nil, sdk.Errorf(sdk.CodeInvalid, "records: config.records: %v", err)
		}
		file, text = "config.records", `{"records":`+string(b)+`}`
		sum = sha256.Sum256([]byte(key + "\x00\x00" + text))
	default:
		return nil, sdk.Errorf(sdk.CodeInvalid, "records: no table: set data = \"FILE\" in the tool source's block (or config.records)")
	}
	p.mu.Lock()
	t, ok := p.cache[sum]
	p.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := parse(file, text, key)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.cache) >= maxCached {
		clear(p.cache)
	}
	p.cache[sum] = t
	p.mu.Unlock()
	return t, nil
}

// parse reads a table: TOML ([[record]]) when the file's name ends in
// .toml, else JSON.
func parse(file, text, key string) (*table, error) {
	bad := func(format string, args ...any) error {
		return sdk.Errorf(sdk.CodeInvalid, "records: %s: %s", file, fmt.Sprintf(format, args...))
	}
	var recs []map[string]any
	if strings.HasSuffix(strings.ToLower(file), ".toml") {
		var doc map[string]any
		_, err := toml.Decode(text, &doc)
		if err != nil {
			return nil, bad("%v", strings.TrimPrefix(err.Error(), "toml: "))
		}
		for k := range doc {
			if k != "record" {
				return nil, bad("unknown key %q (want [[record]] tables)", k)
			}
		}
		list, ok := doc["record"].([]map[string]any)
		if _, isTable := doc["record"]; isTable && !ok {
			return nil, bad("record: want [[record]] tables")
		}
		recs = list
	} else {
		var v any
		d := json.NewDecoder(strings.NewReader(text))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return nil, bad("%v", err)
		}
		if d.More() {
			return nil, bad("more than one JSON value")
		}
		if obj, ok := v.(map[string]any); ok {
			v = obj["records"]
			if len(obj) != 1 || v == nil {
				return nil, bad("want an array of records, or an object whose only member is \"records\"")
			}
		}
		arr, ok := v.([]any)
		if !ok {
			return nil, bad("want an array of records")
		}
		for i, e := range arr {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, bad("records[%d]: a record is an object", i)
			}
			recs = append(recs, m)
		}
	}
	t := &table{key: key, recs: recs, byKey: map[string]int{}}
	for i, rec := range recs {
		k, ok := keyOf(rec[key])
		if !ok {
			return nil, bad("record %d: no %s (want a string or an integer)", i+1, key)
		}
		if j, dup := t.byKey[k]; dup {
			return nil, bad("record %d: %s %q is also record %d's", i+1, key, k, j+1)
		}
		t.byKey[k] = i
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, bad("record %d: %v", i+1, err)
		}
		t.json = append(t.json, b)
		var sb strings.Builder
		flatten(&sb, "", rec)
		t.text = append(t.text, sb.String())
	}
	return t, nil
}

func keyOf(v any) (string, bool) {
	switch k := v.(type) {
	case string:
		return k, k != ""
	case int64:
		return strconv.FormatInt(k, 10), true
	case json.Number:
		if _, err := k.Int64(); err == nil {
			return k.String(), true
		}
	}
	return "", false
}

// flatten writes a record's values as lowercased "field\tvalue" lines, so
// that a search can look in one field (nested ones as a.b).
func flatten(sb *strings.Builder, prefix string, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := k
			if prefix != "" {
				name = prefix + "." + k
			}
			flatten(sb, name, x[k])
		}
	case []any:
		for _, e := range x {
			flatten(sb, prefix, e)
		}
	case []map[string]any:
		for _, e := range x {
			flatten(sb, prefix, e)
		}
	default:
		fmt.Fprintf(sb, "%s\t%s\n", prefix, strings.ToLower(strings.ReplaceAll(fmt.Sprint(x), "\n", " ")))
	}
}

func (t *table) search(query, field string, limit int) *sdk.ToolResult {
	words := strings.Fields(strings.ToLower(query))
	if len(words) == 0 {
		return fail("query is empty: give the words to look for")
	}
	field = strings.ToLower(field)
	var hits []json.RawMessage
	total := 0
	for i, text := range t.text {
		if !matches(text, field, words) {
			continue
		}
		total++
		if len(hits) < limit {
			hits = append(hits, t.json[i])
		}
	}
	if hits == nil {
		hits = []json.RawMessage{}
	}
	b, _ := json.Marshal(struct {
		Records []json.RawMessage `json:"records"`
		Total   int               `json:"total"`
	}{hits, total})
	return &sdk.ToolResult{Content: string(b)}
}

// matches reports whether every word is in the record's values (those of
// field only, when set).
func matches(text, field string, words []string) bool {
	var hay strings.Builder
	for _, line := range strings.Split(text, "\n") {
		name, value, _ := strings.Cut(line, "\t")
		name = strings.ToLower(name)
		if field == "" || name == field || strings.HasPrefix(name, field+".") {
			hay.WriteString(value)
			hay.WriteByte('\n')
		}
	}
	for _, w := range words {
		if !strings.Contains(hay.String(), w) {
			return false
		}
	}
	return true
}

func kinds(cfg map[string]any) []string {
	var out []string
	switch ks := cfg["kinds"].(type) {
	case []string:
		out = ks
	case []any:
		for _, k := range ks {
			if s, ok := k.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// receipt is submit's structured answer.
type receipt struct {
	Request string          `json:"request"`
	Kind    string          `json:"kind"`
	Record  string          `json:"record"`
	Note    string          `json:"note,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

func (t *table) submit(rawID json.RawMessage, kind, note string, details json.RawMessage, accepted []string) (*sdk.ToolResult, error) {
	id, ok := keyArg(rawID)
	if !ok || strings.TrimSpace(kind) == "" {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "records: submit wants {\"id\": \"…\", \"kind\": \"…\"}")
	}
	if len(accepted) > 0 && !contains(accepted, kind) {
		return fail("requests of kind %q are not accepted here (accepted: %s)", kind, strings.Join(accepted, ", ")), nil
	}
	if _, ok := t.byKey[id]; !ok {
		return fail("no record with %s %q", t.key, id), nil
	}
	if len(details) > 0 && string(details) != "null" {
		var obj map[string]any
		if err := json.Unmarshal(details, &obj); err != nil || obj == nil {
			return fail("details must be a JSON object"), nil
		}
		details, _ = json.Marshal(obj) // keys sorted: the same request, the same id
	} else {
		details = nil
	}
	h := sha256.Sum256([]byte(id + "\x00" + kind + "\x00" + note + "\x00" + string(details)))
	rc := receipt{Request: "REQ-" + strings.ToUpper(hex.EncodeToString(h[:5])), Kind: kind, Record: id, Note: note, Details: details}
	b, _ := json.Marshal(rc)
	return &sdk.ToolResult{Content: fmt.Sprintf("filed %s request %s for %s %s", kind, rc.Request, t.key, id), Structured: b}, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
