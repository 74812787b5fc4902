package tomlpos_test

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// A navigator that reads its routine from TOML scans the bytes first (which
// refuses documents over the limits), decodes them, and positions each
// problem it finds with the index.
func ExampleScan() {
	src := []byte(`name = "triage"

[[steps]]
id = "classify"

[[steps]]
id = "reply"
retries = "three"
`)
	ix, err := tomlpos.Scan("triage.toml", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	var doc struct {
		Steps []map[string]any
	}
	if _, err := toml.Decode(string(src), &doc); err != nil {
		fmt.Println(err)
		return
	}
	for i, s := range doc.Steps {
		if r, ok := s["retries"]; ok {
			if _, isInt := r.(int64); !isInt {
				fmt.Printf("triage.toml:%d: steps[%d].retries: want an integer\n", ix.Line("steps", fmt.Sprint(i), "retries"), i)
			}
		}
	}

	_, err = tomlpos.Scan("bomb.toml", []byte("x = "+strings.Repeat("[", 1000)+strings.Repeat("]", 1000)))
	fmt.Println(err)
	// Output:
	// triage.toml:8: steps[1].retries: want an integer
	// bomb.toml:1: nesting deeper than 64 levels
}

// A path without array indexes, as BurntSushi/toml's MetaData.Undecoded
// names keys, finds the first element that defines the key.
func ExampleIndex_Line() {
	src := []byte("[[rule]]\nreply = \"a\"\n\n[[rule]]\nreply = \"b\"\ncolour = 1\n")
	ix, _ := tomlpos.Scan("rules.toml", src)
	var rules struct{ Rule []struct{ Reply string } }
	md, _ := toml.Decode(string(src), &rules)
	for _, k := range md.Undecoded() {
		fmt.Printf("rules.toml:%d: %s: unknown key\n", ix.Line(k...), k)
	}
	fmt.Println(ix.Line("rule", "1"), ix.Line("rule", "1", "missing"), ix.Line("nothing"))
	// Output:
	// rules.toml:6: rule.colour: unknown key
	// 4 4 0
}
