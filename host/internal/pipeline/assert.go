package pipeline

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// The assertion types of [[score.assert]].
const (
	AssertContains   = "contains"
	AssertRegex      = "regex"
	AssertJSONSchema = "json_schema"
	AssertRubric     = "rubric"
	AssertSimilar    = "similar"
)

// AssertTypes lists the assertion types the schema knows; rubric and
// similar are refused at load until they are implemented, so a pipeline
// never silently skips a check it asked for.
var AssertTypes = []string{AssertContains, AssertRegex, AssertJSONSchema, AssertRubric, AssertSimilar}

// assertions checks the [[score.assert]] entries: what each type needs,
// patterns that compile, schema files that exist and resolve, and
// dimension names.
func (l *loader) assertions(p *Pipeline) {
	for i, a := range p.Score.Assert {
		path := []string{"score", "assert", strconv.Itoa(i)}
		at := func(key string) []string { return append(append([]string(nil), path...), key) }
		switch a.Type {
		case AssertContains:
			if a.Value == "" {
				l.add(at("value"), "contains needs a value: the text the output must hold")
			}
		case AssertRegex:
			if a.Value == "" {
				l.add(at("value"), "regex needs a value: the pattern the output must match")
			} else if _, err := regexp.Compile(a.Value); err != nil {
				l.add(at("value"), "bad pattern: %v", err)
			}
		case AssertJSONSchema:
			if a.Schema == "" {
				l.add(at("schema"), "json_schema needs a schema: the JSON Schema file the output must be valid against")
			} else if l.fileExists(p, a.Schema, at("schema")...) {
				if _, err := LoadJSONSchema(p.Path(a.Schema)); err != nil {
					l.add(at("schema"), "%v", err)
				}
			}
		case AssertRubric, AssertSimilar:
			l.add(at("type"), "%s assertions are not supported yet (contains, regex and json_schema are)", a.Type)
		}
		if a.Type != AssertJSONSchema && a.Schema != "" {
			l.add(at("schema"), "only json_schema takes a schema")
		}
		if a.Type == AssertJSONSchema && a.Value != "" {
			l.add(at("value"), "json_schema takes a schema file, not a value")
		}
		l.expression(a.Of, at("of")...)
		if a.Name != "" {
			if err := store.ValidDimension(a.Name); err != nil {
				l.add(at("name"), "%v", err)
			}
		}
	}
}

// LoadJSONSchema reads and resolves a JSON Schema file.
func LoadJSONSchema(file string) (r *jsonschema.Resolved, err error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	defer func() {
		if recover() != nil { // the library panics on some malformed schemas
			r, err = nil, errBadSchema
		}
	}()
	return s.Resolve(nil)
}

var errBadSchema = errors.New("not a JSON Schema the validator can use")
