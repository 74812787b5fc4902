package sdk

import "testing"

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
