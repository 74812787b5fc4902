package pipeline

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/suggest"
)

// The assertion types of [[score.assert]].
const (
	AssertContains   = "contains"
	AssertRegex      = "regex"
	AssertJSONSchema = "json_schema"
	AssertRubric     = "rubric"
	AssertSimilar    = "similar"
)

// AssertTypes lists the assertion types the schema knows.
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
			l.modelGraded(p, a, at)
		}
		l.assertKeys(i, a.Type, at)
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

// modelGraded checks a rubric or similar assertion: a declared provider,
// what to grade against, a threshold in range, a prompt that parses.
func (l *loader) modelGraded(p *Pipeline, a Assertion, at func(string) []string) {
	switch {
	case a.Provider == "":
		l.add(at("provider"), "%s needs a provider: the [providers] block that %s", a.Type,
			map[string]string{AssertRubric: "judges", AssertSimilar: "embeds"}[a.Type])
	case p.Providers[a.Provider].Use == "":
		names := make([]string, 0, len(p.Providers))
		for n := range p.Providers {
			names = append(names, n)
		}
		sort.Strings(names)
		l.add(at("provider"), "unknown provider %q%s", a.Provider, suggest.Hint(a.Provider, names))
	}
	if a.Threshold == nil {
		l.add(at("threshold"), "%s needs a threshold: the score a pass needs", a.Type)
	}
	switch a.Type {
	case AssertRubric:
		if a.Value == "" && a.Prompt == "" {
			l.add(at("value"), "rubric needs a value: the rubric the judge rates against (or a prompt of its own)")
		}
		if a.Scale < 2 {
			l.add(at("scale"), "a scale of %d leaves the judge no choice: rate 1 to 2 or more", a.Scale)
		}
		if t := a.Threshold; t != nil && (*t < 0 || *t > 1) {
			l.add(at("threshold"), "threshold %v is off the score's range 0 to 1", *t)
		}
		l.template(a.Prompt, at("prompt")...)
	case AssertSimilar:
		switch {
		case a.Value == "" && a.Reference == "":
			l.add(at("value"), "similar needs a value (the reference text) or a reference (an expression giving it)")
		case a.Value != "" && a.Reference != "":
			l.add(at("reference"), "similar takes a value or a reference, not both")
		}
		if t := a.Threshold; t != nil && (*t < -1 || *t > 1) {
			l.add(at("threshold"), "threshold %v is off the cosine's range -1 to 1", *t)
		}
		l.expression(a.Reference, at("reference")...)
	}
}

// assertKeys refuses keys the assertion's type does not read, as the user
// wrote them (scale's default is everywhere once defaults are applied).
func (l *loader) assertKeys(i int, typ string, at func(string) []string) {
	score, _ := l.raw["score"].(map[string]any)
	var raw map[string]any
	switch list := score["assert"].(type) {
	case []map[string]any:
		if i < len(list) {
			raw = list[i]
		}
	case []any:
		if i < len(list) {
			raw, _ = list[i].(map[string]any)
		}
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		takers, ok := assertKeyTypes[k]
		if ok && !takers[typ] {
			l.add(at(k), "%s does not take %s (%s)", typ, k, takersOf(takers))
		}
	}
}

// assertKeyTypes says which types read each type-specific key.
var assertKeyTypes = map[string]map[string]bool{
	"provider":  {AssertRubric: true, AssertSimilar: true},
	"model":     {AssertRubric: true, AssertSimilar: true},
	"threshold": {AssertRubric: true, AssertSimilar: true},
	"prompt":    {AssertRubric: true},
	"scale":     {AssertRubric: true},
	"reference": {AssertSimilar: true},
}

func takersOf(types map[string]bool) string {
	var out []string
	for _, t := range AssertTypes {
		if types[t] {
			out = append(out, t)
		}
	}
	if len(out) == 1 {
		return "only " + out[0] + " does"
	}
	return "only " + strings.Join(out, " and ") + " do"
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
