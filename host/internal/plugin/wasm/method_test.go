package wasm

import (
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestMethodOf: fault messages name the method of api 1 and api 2
// envelopes alike.
func TestMethodOf(t *testing.T) {
	api1, err := sdk.EncodeRequest(sdk.MethodChat, &sdk.ChatRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req  []byte
		want string
	}{
		{api1, "provider.chat"},
		{[]byte("\x83\xa3api\x02\xa6method\xaenavigator.next\xa6params\x80"), "navigator.next"},
		{[]byte("\x81\xc1"), "call"},
		{[]byte("garbage"), "call"},
	} {
		if got := methodOf(tc.req); got != tc.want {
			t.Errorf("methodOf(%q) = %q, want %q", tc.req, got, tc.want)
		}
	}
}
