package builtins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestDecideFile: a decision evaluates; a missing model, a bad input and
// a decision the model lacks are invalid input.
func TestDecideFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.dmn")
	model := `<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" id="d" name="d" namespace="x">
  <decision id="Double" name="Double">
    <variable name="Double" typeRef="number"/>
    <literalExpression><text>21 * 2</text></literalExpression>
  </decision>
</definitions>`
	if err := os.WriteFile(path, []byte(model), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := DecideFile(ctx, path, "Double", `{"N": 21}`, strings.NewReader(""))
	if err != nil || FormatFEEL(v) != "42" {
		t.Fatalf("Double: %v %v, want 42", v, err)
	}
	for _, tt := range []struct{ path, decision, input string }{
		{path + ".missing", "Double", ""},
		{path, "Double", `{"N": `},
		{path, "Nope", `{"N": 1}`},
	} {
		if _, err := DecideFile(ctx, tt.path, tt.decision, tt.input, strings.NewReader("")); !errors.Is(err, sdk.ErrInvalid) {
			t.Errorf("%+v: %v, want invalid input", tt, err)
		}
	}
}
