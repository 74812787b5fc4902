package store

import (
	"bytes"
	"testing"
)

// TestJournalTexts: the copies journal.text hands out, past several
// blocks and a long one made alone, stay as their bytes were when
// copied, whatever is written to those bytes (the segment) or copied
// after; a block takes one allocation for many.
func TestJournalTexts(t *testing.T) {
	var j journal
	src := bytes.Repeat([]byte("0123456789abcdef"), textBlock/8)
	var texts, want []string
	for i := range 200 {
		n := 1 + i*37%700
		if i == 100 {
			n = textBlock/8 + 1
		}
		b := src[:n]
		texts, want = append(texts, j.text(b)), append(want, string(b))
		b[0]++ // the segment's bytes may change once applied
	}
	for i := range texts {
		if texts[i] != want[i] {
			t.Fatalf("text %d changed: %q…, want %q…", i, texts[i][:8], want[i][:8])
		}
	}
	if n := testing.AllocsPerRun(100, func() { j.text(src[:100]) }); n > 0.1 {
		t.Errorf("%.2f allocations a text, want a block's share", n)
	}
}
