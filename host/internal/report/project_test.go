package report

import (
	"strings"
	"testing"
)

// TestWriteProjectWritten: the files one a line, and a next command that
// changes into a directory other than this one, quoted for the shell.
func TestWriteProjectWritten(t *testing.T) {
	var b strings.Builder
	if err := WriteProjectWritten(&b, "my app", []string{"pipeline.toml", "inputs/refund.json"}); err != nil {
		t.Fatal(err)
	}
	want := "wrote 2 files in my app:\n  pipeline.toml\n  inputs/refund.json\n" +
		"next: cd 'my app' && sextant run pipeline.toml --input inputs/refund.json --truth '{\"action\":\"refund\"}'\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteProjectWritten(&b, ".", nil); err != nil || !strings.HasSuffix(b.String(), "next: sextant run pipeline.toml --input inputs/refund.json --truth '{\"action\":\"refund\"}'\n") {
		t.Errorf("here: %q %v", b.String(), err)
	}
}
