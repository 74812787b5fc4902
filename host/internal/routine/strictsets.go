package routine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// BadJSONError is an assignment whose value starts like JSON but is not
// valid JSON (ParseStrictSets).
type BadJSONError struct {
	Name string
	Err  error
}

func (e *BadJSONError) Error() string { return fmt.Sprintf("%s: not valid JSON: %v", e.Name, e.Err) }
func (e *BadJSONError) Unwrap() error { return e.Err }

// ParseStrictSets parses the NAME=VALUE assignments an operator gives a
// run's variables (sextant retry --set, sextant set) as ParseSets does
// with Native numbers, but a value that starts like JSON (an object, an
// array or a string) must be valid JSON: a typo is a *BadJSONError, never
// a string assigned in its place.
func ParseStrictSets(sets []string) (map[string]any, error) {
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want NAME=VALUE", s)
		}
		if t := strings.TrimSpace(v); t != "" && strings.ContainsAny(t[:1], `{["`) {
			var x any
			dec := json.NewDecoder(strings.NewReader(t))
			if err := dec.Decode(&x); err != nil || dec.More() {
				if err == nil {
					err = errors.New("more than one value")
				}
				return nil, &BadJSONError{Name: k, Err: err}
			}
		}
	}
	return ParseSets(sets, Native)
}
