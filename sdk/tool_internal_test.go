package sdk

import (
	"os"
	"strings"
	"testing"
)

// TestRawDecode: a json.RawMessage field takes JSON text in a str (what
// the SDK writes) or the MessagePack value itself (what another
// language's library may write), and refuses a str that is not JSON.
func TestRawDecode(t *testing.T) {
	for _, tc := range []struct{ name, in, want, err string }{
		{"text", "\x81\xa9arguments\xa8{\"a\": 1}", `{"a": 1}`, ""},
		{"value", "\x81\xa9arguments\x82\xa1b\x93\x01\xc3\xc0\xa1a\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00", `{"a":1.5,"b":[1,true,null]}`, ""},
		{"nil", "\x81\xa9arguments\xc0", `null`, ""},
		{"not json", "\x81\xa9arguments\xa3{a:", "", `at byte 11: arguments: want JSON text in a str, got "{a:"`},
		{"bad value", "\x81\xa9arguments\xc1", "", "at byte 11: arguments: want a JSON value (nil, bool, number, string, array, map), got the unused byte 0xc1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v ToolCallRequest
			msg := []byte(tc.in)
			d := decoder{b: msg, in: &interner{trusted: true}}
			err := d.decToolCallRequest(&v)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v\nwant  %s", err, tc.err)
				}
				return
			}
			if err != nil || string(v.Arguments) != tc.want {
				t.Fatalf("arguments %s, err %v; want %s", v.Arguments, err, tc.want)
			}
			clear(msg) // the transport reuses its buffer: the arguments are a copy
			if string(v.Arguments) != tc.want {
				t.Fatalf("arguments alias the message: %q", v.Arguments)
			}
		})
	}
}

// TestProtocolRawExample: PROTOCOL.md's example of a JSON value kept as
// written is what the SDK writes.
func TestProtocolRawExample(t *testing.T) {
	e := encoder{}
	e.encToolCallRequest(&ToolCallRequest{Name: "f", Arguments: []byte(`{ "city": "Paris" }`)})
	const want = "\xa9arguments\xb0{\"city\":\"Paris\"}"
	if !strings.Contains(string(e.b), want) {
		t.Fatalf("encoded % x, want it to hold % x", e.b, want)
	}
	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "`a9617267756d656e7473 b07b2263697479223a225061726973227d`") {
		t.Fatal("PROTOCOL.md lost the example of arguments in api 2")
	}
}
