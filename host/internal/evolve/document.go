package evolve

import (
	"fmt"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Gates that need a strategy's limits read them from the comparison's
// StrategyRef.Document (strategy.Env: the file's tables under their TOML
// names), the same data a gate plugin receives. So a built-in gate is a
// function of the comparison alone and judges a stored comparison exactly
// as it judged the live one.

// docValue looks up path in the document of ref, which is the "baseline" or
// the "candidate".
func docValue(ref sdk.StrategyRef, who string, path ...string) (any, error) {
	var cur any = ref.Document
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s document has no %s", who, strings.Join(path, "."))
		}
		if cur, ok = m[k]; !ok {
			return nil, fmt.Errorf("%s document has no %s", who, strings.Join(path, "."))
		}
	}
	return cur, nil
}

func docWrong(who string, path []string, want string, v any) error {
	return fmt.Errorf("%s document: %s: want %s, got %s", who, strings.Join(path, "."), want, describe(v))
}

func docFloat(ref sdk.StrategyRef, who string, path ...string) (float64, error) {
	v, err := docValue(ref, who, path...)
	if err != nil {
		return 0, err
	}
	f, ok := toFloat(v)
	if !ok {
		return 0, docWrong(who, path, "a number", v)
	}
	return f, nil
}

func docString(ref sdk.StrategyRef, who string, path ...string) (string, error) {
	v, err := docValue(ref, who, path...)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", docWrong(who, path, "a string", v)
	}
	return s, nil
}

func docBool(ref sdk.StrategyRef, who string, path ...string) (bool, error) {
	v, err := docValue(ref, who, path...)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, docWrong(who, path, "a boolean", v)
	}
	return b, nil
}

func docStrings(ref sdk.StrategyRef, who string, path ...string) ([]string, error) {
	v, err := docValue(ref, who, path...)
	if err != nil {
		return nil, err
	}
	switch l := v.(type) {
	case []string:
		return l, nil
	case []any:
		out := make([]string, len(l))
		for i, el := range l {
			s, ok := el.(string)
			if !ok {
				return nil, docWrong(who, path, "a list of strings", v)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, docWrong(who, path, "a list of strings", v)
}

// docTime reads an RFC 3339 time; an empty string (a strategy without the
// time) is reported as missing.
func docTime(ref sdk.StrategyRef, who string, path ...string) (time.Time, error) {
	s, err := docString(ref, who, path...)
	if err != nil {
		return time.Time{}, err
	}
	if s == "" {
		return time.Time{}, fmt.Errorf("%s document has no %s", who, strings.Join(path, "."))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s document: %s: %q is not an RFC 3339 time", who, strings.Join(path, "."), s)
	}
	return t.UTC(), nil
}

// docBounds reads parameter_bounds.NAME as [lo, hi]; ok is false when the
// document does not list the parameter.
func docBounds(ref sdk.StrategyRef, who, name string) (lo, hi float64, ok bool, err error) {
	v, err := docValue(ref, who, "parameter_bounds", name)
	if err != nil {
		return 0, 0, false, nil
	}
	path := []string{"parameter_bounds", name}
	l, isList := v.([]any)
	if !isList || len(l) != 2 {
		return 0, 0, false, docWrong(who, path, "[lo, hi]", v)
	}
	lo, ok1 := toFloat(l[0])
	hi, ok2 := toFloat(l[1])
	if !ok1 || !ok2 {
		return 0, 0, false, docWrong(who, path, "[lo, hi]", v)
	}
	return lo, hi, true, nil
}
