package temporal

import (
	"strings"
	"testing"
)

// TestCheckWorkerArgs: each missing or doubled argument is named; a
// complete set passes.
func TestCheckWorkerArgs(t *testing.T) {
	for _, tt := range []struct{ addr, pipelines, url, dir, want string }{
		{"", "p", "u", "", "--temporal"},
		{"h:1", "", "u", "", "--pipelines"},
		{"h:1", "p", "", "", "one of --store-url"},
		{"h:1", "p", "u", "d", "one of --store-url"},
		{"h:1", "p", "", "d", ""},
	} {
		err := CheckWorkerArgs(tt.addr, tt.pipelines, tt.url, tt.dir)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt, err, tt.want)
		}
	}
}
