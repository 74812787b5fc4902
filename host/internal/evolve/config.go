package evolve

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/host/internal/suggest"
)

// gateConfig reads one built-in gate's [[gates]] keys by the declaration
// in pipeline.BuiltinGates: names, types, defaults and allowed values come
// from there and nowhere else. It accepts what TOML decodes to (int64,
// float64) and what JSON does (float64 for every number), so a comparison
// read back from the store is judged the same way.
type gateConfig struct {
	fields []schema.Field
	raw    map[string]any
}

// newGateConfig checks raw against the gate's declaration: unknown keys are
// errors, reported together, with the near miss.
func newGateConfig(gate string, raw map[string]any) (gateConfig, error) {
	fields := pipeline.BuiltinGates[gate]
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	var probs []string
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !slices.Contains(names, k) {
			want := "takes no keys"
			if len(names) > 0 {
				want = "takes " + strings.Join(names, ", ")
			}
			probs = append(probs, fmt.Sprintf("config: unknown key %q%s (%s %s)", k, suggest.Hint(k, names), gate, want))
		}
	}
	if len(probs) > 0 {
		return gateConfig{}, fmt.Errorf("%s", strings.Join(probs, "; "))
	}
	return gateConfig{fields: fields, raw: raw}, nil
}

func (c gateConfig) field(key string) schema.Field {
	for _, f := range c.fields {
		if f.Name == key {
			return f
		}
	}
	panic("evolve: gate reads undeclared config key " + key)
}

// value returns the key's value, or its default; set reports whether
// either exists.
func (c gateConfig) value(key string) (v any, set bool) {
	if v, ok := c.raw[key]; ok {
		return v, true
	}
	f := c.field(key)
	return f.Default, f.Default != nil
}

// number reads a Number or Int key as a finite float64.
func (c gateConfig) number(key string) (float64, bool, error) {
	v, set := c.value(key)
	if !set {
		return 0, false, nil
	}
	f, ok := toFloat(v)
	switch {
	case !ok:
		return 0, false, fmt.Errorf("config: %s: want a number, got %s", key, describe(v))
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, false, fmt.Errorf("config: %s: want a finite number, got %v", key, f)
	}
	return f, true, nil
}

// integer reads an Int key; a float64 is accepted when it is whole (JSON).
func (c gateConfig) integer(key string) (int, bool, error) {
	f, set, err := c.number(key)
	if err != nil || !set {
		return 0, set, err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false, fmt.Errorf("config: %s: want an integer, got %v", key, f)
	}
	return int(f), true, nil
}

// str reads a String key, checking its allowed values.
func (c gateConfig) str(key string) (string, error) {
	v, _ := c.value(key)
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("config: %s: want a string, got %s", key, describe(v))
	}
	if enum := c.field(key).Enum; len(enum) > 0 && !slices.Contains(enum, s) {
		return "", fmt.Errorf("config: %s: %q is not one of %s%s", key, s, strings.Join(enum, ", "), suggest.Hint(s, enum))
	}
	return s, nil
}

// confidence reads the confidence key, which must lie in (0, 1).
func (c gateConfig) confidence() (float64, error) {
	f, _, err := c.number("confidence")
	if err != nil {
		return 0, err
	}
	if f <= 0 || f >= 1 {
		return 0, fmt.Errorf("config: confidence: %v is not in (0, 1)", f)
	}
	return f, nil
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	}
	return 0, false
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing"
	case string:
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case []any:
		return "array"
	case map[string]any:
		return "table"
	}
	if f, ok := toFloat(v); ok {
		return fmt.Sprintf("number %v", f)
	}
	return fmt.Sprintf("%T", v)
}
