package sdk

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestProtocolExample: the api 2 example in PROTOCOL.md is what the SDK
// writes, byte for byte.
func TestProtocolExample(t *testing.T) {
	got, err := encodeRequest2(MethodNext, &NextRequest{State: State{Routine: "ab", Seq: 1}, Token: "t1", Outcome: Outcome{Status: OK}}, (*encoder).encNextRequest)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "is (hex, grouped by value)\n\n```\n")
	block, _, _ := strings.Cut(rest, "```")
	want, err := hex.DecodeString(strings.Join(strings.Fields(block), ""))
	if err != nil {
		t.Fatalf("PROTOCOL.md example: %v", err)
	}
	if string(got) != string(want) {
		t.Fatalf("PROTOCOL.md example differs from what the SDK writes:\n doc % x\n sdk % x", want, got)
	}
}
