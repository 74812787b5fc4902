package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/sextant-dev/sextant/sdk"
)

// rawSet writes a raw value under a key, bypassing the codec.
func rawSet(t *testing.T, s *Store, key string, val []byte) {
	t.Helper()
	if hash, ok := strings.CutPrefix(key, pRec); ok {
		s.noteRecording(hash) // as every write of a recording does
	}
	must(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(key), val) }))
}

func TestSchemaVersion(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	seed(t, s, "t1", 1)
	tests := []struct {
		name string
		key  string
		val  []byte
		read func() error
		want string
	}{
		{"newer task", "t/t1/a", append([]byte{9}, `{"id":"t1"}`...),
			func() error { _, err := s.Task(ctx, "t1"); return err },
			`read task "t1": value at t/t1/a has schema version 9; this sextant reads version 1 (upgrade sextant)`},
		{"empty value", "t/t1/a", nil,
			func() error { _, err := s.Tree(ctx, "t1"); return err },
			`read task "t1": value at t/t1/a has no schema version (empty or corrupt)`},
		{"newer span", "t/t1/s/t1-e1/\x00\x00\x00\x00\x00\x00\x00\x01", append([]byte{2}, '{', '}'),
			func() error { _, err := s.Spans(ctx, "t1", "t1-e1"); return err },
			`read spans of execution "t1-e1": value at t/t1/s/t1-e1/\x00\x00\x00\x00\x00\x00\x00\x01 has schema version 2; this sextant reads version 1 (upgrade sextant)`},
		{"bad json", "r/abc", append([]byte{1}, `{"hash":`...),
			func() error { _, err := s.Recording(ctx, "abc"); return err },
			`read recording abc: damaged store: decode r/abc: unexpected end of JSON input`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rawSet(t, s, tt.key, tt.val)
			err := tt.read()
			wantErr(t, err, tt.want)
			if tt.name != "bad json" && !errors.Is(err, ErrSchemaVersion) {
				t.Fatal("not ErrSchemaVersion")
			}
		})
	}
}

func TestLayoutVersion(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	rawSet(t, s, keyMeta, append([]byte{1}, fmt.Sprintf(`{"layout":%d}`, layoutVersion+1)...))
	must(t, s.Close())
	_, err = Open(ctx, dir, testConfig())
	wantErr(t, err, fmt.Sprintf("open store %s: key layout %d is not supported by this sextant (it reads layout %d): unsupported schema version", dir, layoutVersion+1, layoutVersion))
}

func TestValueJSON(t *testing.T) {
	tests := []struct {
		name string
		v    Value
		js   string
	}{
		{"string", String("a\"b"), `"a\"b"`},
		{"int", Int(-7), `-7`},
		{"big int", Int(1 << 62), `4611686018427387904`},
		{"float whole", Float(3), `3.0`},
		{"float", Float(0.25), `0.25`},
		{"float exp", Float(1e21), `1e+21`},
		{"bool", Bool(false), `false`},
		{"strings", Strings("a", "b"), `["a","b"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			must(t, err)
			if string(b) != tt.js {
				t.Fatalf("marshal %s, want %s", b, tt.js)
			}
			var back Value
			must(t, json.Unmarshal(b, &back))
			if !back.Equal(tt.v) {
				t.Fatalf("round trip %#v, want %#v", back, tt.v)
			}
		})
	}
	bad := []struct{ js, want string }{
		{`{"a":1}`, `attribute value {"a":1} is not a string, number, bool or string array`},
		{`[1,2]`, `attribute arrays must hold strings only`},
		{`99999999999999999999`, `attribute value 99999999999999999999: integer out of range`},
	}
	for _, tt := range bad {
		var v Value
		err := json.Unmarshal([]byte(tt.js), &v)
		wantErr(t, err, tt.want)
	}
	if _, err := json.Marshal(Float(nan())); err == nil || !strings.Contains(err.Error(), "NaN and infinite floats cannot be stored") {
		t.Fatalf("NaN: %v", err)
	}
	for _, x := range []any{"s", 1, int64(2), 2.5, true, []string{"a"}, json.Number("3"), json.Number("3.5")} {
		if _, err := AnyValue(x); err != nil {
			t.Fatalf("AnyValue(%v): %v", x, err)
		}
	}
	_, err := AnyValue(struct{}{})
	wantErr(t, err, "attribute value of type struct {} is not supported (want string, int, float, bool or []string)")
}

func TestIDs(t *testing.T) {
	s := openTest(t, testConfig().WithClock(func() time.Time { return t0 }))
	prev := ""
	for range 1000 {
		id := s.NewID()
		if len(id) != 26 || id <= prev {
			t.Fatalf("id %q after %q: not increasing", id, prev)
		}
		if err := validID("id", id); err != nil {
			t.Fatal(err)
		}
		prev = id
	}
	if !strings.HasPrefix(prev, "01KH0Z6X20") { // 2026-02-09T10:30:00Z in ULID time
		t.Fatalf("time part of %q", prev)
	}
	if ab, ab2 := TraceIDFor("a", "b"), TraceIDFor("a", "b"); ab != ab2 || ab == TraceIDFor("a", "c") {
		t.Fatal("trace ids not derived")
	}
	seen := map[string]bool{}
	for seq := range uint64(10000) {
		id := SpanIDFor("a", "b", seq)
		if seen[id] || validHexID("span id", id, 8) != nil {
			t.Fatalf("span id %q for seq %d: repeated or invalid", id, seq)
		}
		seen[id] = true
	}
}

// TestEncodeCheckpoint: the hand-written checkpoint encoding gives exactly
// encoding/json's bytes, and its error for a time JSON cannot hold.
func TestEncodeCheckpoint(t *testing.T) {
	at := time.Date(2026, 11, 26, 15, 4, 5, 123456789, time.UTC)
	for _, c := range []Checkpoint{
		{Task: "t1", Execution: "e1", Step: 3, State: []byte(`{"steps":3,"vars":{"a":"<b> & \"c\""}}`), Updated: at},
		{Task: "01JABCDEFGHJKMNPQRSTVWXYZ0", Execution: "x-y_z.1", Step: 0, State: nil, Updated: at.Truncate(time.Second)},
		{Task: "t", Execution: "e", Step: 1<<64 - 1, State: []byte{}, Updated: time.Time{}.UTC()},
		{Task: "t", Execution: "e", State: []byte{0, 1, 2, 0xff, 0xfe}, Updated: time.Date(9999, 12, 31, 23, 59, 59, 1, time.UTC)},
		{Task: "t", Execution: "e", State: []byte("x"), Updated: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		want, wantErr := encodeRedacted(&c)
		got, err := encodeCheckpoint(&c)
		if (err != nil) != (wantErr != nil) || string(got) != string(want) {
			t.Errorf("checkpoint %+v:\n got %q, %v\nwant %q, %v", c, got, err, want, wantErr)
		}
	}
}

// TestEncodeRecording: a recording is encoded as encoding/json (and
// redaction) would encode it, raw request and response compacted and
// escaped alike.
func TestEncodeRecording(t *testing.T) {
	s := openTest(t)
	total, refused := 0, 0
	at := time.Date(2026, 11, 26, 15, 4, 5, 120000000, time.UTC)
	base := Recording{Hash: "h1", Kind: RecordChat, Provider: "default", Request: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`),
		Response: json.RawMessage(`{"text":"yo","usage":{"input_tokens":1,"output_tokens":2}}`), Usage: sdk.Usage{InputTokens: 1, OutputTokens: 2},
		Latency: 1500 * time.Microsecond, Task: "t1", Created: at}
	for name, edit := range map[string]func(r *Recording){
		"plain": func(*Recording) {},
		"minimal": func(r *Recording) {
			r.Provider, r.Usage, r.Latency, r.Task, r.Kind = "", sdk.Usage{}, 0, "", RecordHuman
		},
		"spaces":    func(r *Recording) { r.Request = json.RawMessage(" {\n\t\"a\" : [ 1 , \"b c\" ] ,\"d\":{ } }\r\n") },
		"html":      func(r *Recording) { r.Response = json.RawMessage(`{"text":"<b> & </b>"}`) },
		"separator": func(r *Recording) { r.Response = json.RawMessage("{\"text\":\"a\u2028b\u2029\"}") },
		"escapes":   func(r *Recording) { r.Request = json.RawMessage(`"\u003c\b\f\n é \ud83d\ude00"`) },
		"odd names": func(r *Recording) { r.Provider = "p<&>\"\\\b\f\x01é\u2028" },
		"odd name":  func(r *Recording) { r.Provider = "p<&>\"\\\x01é\u2028" },
		"negative":  func(r *Recording) { r.Latency = -5; r.Usage = sdk.Usage{OutputTokens: 3} },
		"scalars":   func(r *Recording) { r.Request, r.Response = json.RawMessage(`42`), json.RawMessage(` null `) },
		"secret":    func(r *Recording) { r.Request = json.RawMessage(`{"api_key":"sk-abcdefghijklmnopqrstuvwx"}`) },
		"nil":       func(r *Recording) { r.Response = nil },
		"far":       func(r *Recording) { r.Created = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"invalid":   func(r *Recording) { r.Request = json.RawMessage(`{"a":`) },
	} {
		r := base
		edit(&r)
		total++
		if checkRecording(&r) != nil {
			refused++
			continue // PutRecording never encodes it
		}
		want, wantErr := s.encode(&r)
		got, err := s.encodeRecording(&r)
		if (err != nil) != (wantErr != nil) || string(got) != string(want) {
			t.Errorf("%s:\n got %q, %v\nwant %q, %v", name, got, err, want, wantErr)
		}
	}
	if refused != 2 || total-refused < 12 {
		t.Errorf("%d recordings, %d refused by checkRecording; want 2 (nil, invalid) of 14", total, refused)
	}
}

// fillAll sets every field reachable from v to a value that is not its
// zero value, so that an encoder written field by field and compared with
// encoding/json misses no field (a field added to the struct later fails
// the comparison until the encoder writes it too).
func fillAll(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)))
		return
	}
	if v.Type() == reflect.TypeOf(json.RawMessage{}) {
		v.Set(reflect.ValueOf(json.RawMessage(`{"k":[1,"x"]}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Interface:
		v.Set(reflect.ValueOf("v"))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillAll(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillAll(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(k, depth+1)
		fillAll(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i), depth+1)
			}
		}
	}
}

// TestEncodeEveryField: with every field of a checkpoint and a recording
// set, the direct encodings equal encoding/json's: a field added to
// either fails here until its encoder writes it.
func TestEncodeEveryField(t *testing.T) {
	s := openTest(t)
	var c Checkpoint
	fillAll(reflect.ValueOf(&c).Elem(), 0)
	want, err := encodeRedacted(&c)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := encodeCheckpoint(&c); err != nil || string(got) != string(want) {
		t.Errorf("checkpoint:\n got %s (%v)\nwant %s", got, err, want)
	}
	var r Recording
	fillAll(reflect.ValueOf(&r).Elem(), 0)
	if want, err = s.encode(&r); err != nil {
		t.Fatal(err)
	}
	if got, err := s.encodeRecording(&r); err != nil || string(got) != string(want) {
		t.Errorf("recording:\n got %s (%v)\nwant %s", got, err, want)
	}
}
