package routine

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Numbers says how [ParseSets] keeps the JSON numbers it reads.
type Numbers int

const (
	// Native numbers are int64 when whole, else float64: what expr-lang,
	// conditions and step inputs compute with.
	Native Numbers = iota
	// Exact numbers stay json.Number, which FEEL reads as exact decimals.
	Exact
)

// ParseSets parses NAME=VALUE assignments: a value is JSON when it parses
// as one JSON value, else the string itself. A later assignment to a name
// replaces an earlier one. The error quotes the assignment that has no
// NAME=.
func ParseSets(sets []string, numbers Numbers) (map[string]any, error) {
	out := map[string]any{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want NAME=VALUE", s)
		}
		var val any
		dec := json.NewDecoder(strings.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&val); err == nil && !dec.More() {
			if numbers == Native {
				val = normalizeNumbers(val)
			}
			out[k] = val
		} else {
			out[k] = v
		}
	}
	return out, nil
}

// normalizeNumbers turns json.Number into int64 or float64.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}

// ParseChoices parses GATEWAY=FLOW[,FLOW] choices (routine simulate
// --choose): the flows a gateway without conditions takes, by gateway,
// in the order given.
func ParseChoices(chooses []string) (map[string][]string, error) {
	choose := map[string][]string{}
	for _, c := range chooses {
		gw, flows, ok := strings.Cut(c, "=")
		if !ok || gw == "" || flows == "" {
			return nil, fmt.Errorf("%q: want GATEWAY=FLOW[,FLOW]", c)
		}
		choose[gw] = append(choose[gw], strings.Split(flows, ",")...)
	}
	return choose, nil
}
