package docgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/schema"
)

func schemaPage(title, file, intro string, spec *schema.Block) string {
	var b strings.Builder
	b.WriteString(generated)
	fmt.Fprintf(&b, "# %s (`%s`)\n\n%s\n\n", title, file, intro)
	b.WriteString("| key | type | default | allowed | description |\n|---|---|---|---|---|\n")
	schema.Walk(spec, "", func(k schema.Key) {
		f := k.Field
		def := ""
		if f.Default != nil {
			def = "`" + tomlValue(f.Default) + "`"
		}
		var allowed []string
		if len(f.Enum) > 0 {
			allowed = append(allowed, "`"+strings.Join(f.Enum, "` · `")+"`")
		}
		if f.Bound != schema.Unbounded {
			allowed = append(allowed, f.Bound.String())
		}
		if f.Required {
			allowed = append(allowed, "required")
		}
		if f.Block != nil && f.Block.Open {
			allowed = append(allowed, "other keys passed through")
		}
		doc := mdCell(f.Doc)
		if k.When != "" {
			doc = "with `" + k.When + "`: " + doc
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Path, f.Type, def, strings.Join(allowed, ", "), doc)
	})
	return b.String()
}

func tomlValue(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = fmt.Sprintf("%q", s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return fmt.Sprint(v)
}

func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// jsonSchema renders a block as a JSON Schema (draft-07, which taplo
// reads) for editors: types, enums, bounds, defaults and descriptions.
func jsonSchema(title string, spec *schema.Block) []byte {
	s := blockSchema(spec)
	s["$schema"] = "http://json-schema.org/draft-07/schema#"
	s["title"] = title
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // maps of strings, numbers and slices cannot fail
	return b.Bytes()
}

func blockSchema(b *schema.Block) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range b.Fields {
		props[f.Name] = fieldSchema(f)
		if f.Required {
			required = append(required, f.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": b.Open}
	if len(required) > 0 {
		s["required"] = required
	}
	if v := b.Variants; v != nil {
		s["allOf"] = variantSchemas(b, v)
	}
	return s
}

// variantSchemas closes an open block for each of its variants, as the
// loader does: a [[gates]] entry whose use names a built-in gate takes
// that gate's options and no other key, and one naming a plugin stays open.
func variantSchemas(b *schema.Block, v *schema.Variants) []any {
	var out []any
	for _, name := range v.Names() {
		props := map[string]any{}
		for _, f := range b.Fields {
			props[f.Name] = map[string]any{}
		}
		for _, f := range v.Cases[name] {
			props[f.Name] = fieldSchema(f)
		}
		out = append(out, map[string]any{
			"if": map[string]any{
				"properties": map[string]any{v.Key: map[string]any{"const": name}},
				"required":   []string{v.Key},
			},
			"then": map[string]any{"properties": props, "additionalProperties": false},
		})
	}
	return out
}

func fieldSchema(f schema.Field) map[string]any {
	var s map[string]any
	switch f.Type {
	case schema.String:
		s = map[string]any{"type": "string"}
		if len(f.Enum) > 0 {
			s["enum"] = f.Enum
		}
	case schema.Int:
		s = map[string]any{"type": "integer"}
	case schema.Number:
		s = map[string]any{"type": "number"}
	case schema.Bool:
		s = map[string]any{"type": "boolean"}
	case schema.Duration:
		s = map[string]any{"type": "string", "pattern": `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d))+$`}
	case schema.Size:
		s = map[string]any{"type": "string", "pattern": `^[0-9]+ ?([KMGT]i?B|B)?$`}
	case schema.StringList:
		s = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	case schema.StringMap:
		s = map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
	case schema.Datetime:
		s = map[string]any{"type": "string", "format": "date-time"}
	case schema.NumberMap:
		s = map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "number"}}
	case schema.RangeMap:
		pair := map[string]any{"type": "array", "items": map[string]any{"type": "number"}, "minItems": 2, "maxItems": 2}
		s = map[string]any{"type": "object", "additionalProperties": pair}
	case schema.Table:
		s = map[string]any{"type": "object"}
		if f.Block != nil {
			s = blockSchema(f.Block)
		}
	case schema.TableMap:
		s = map[string]any{"type": "object", "additionalProperties": blockSchema(f.Block)}
	case schema.TableArray:
		s = map[string]any{"type": "array", "items": blockSchema(f.Block)}
	default:
		s = map[string]any{}
	}
	switch f.Bound {
	case schema.Positive:
		if f.Type == schema.Int || f.Type == schema.Number {
			s["exclusiveMinimum"] = 0
		}
	case schema.NonNegative:
		if f.Type == schema.Int || f.Type == schema.Number {
			s["minimum"] = 0
		}
	}
	if f.Default != nil {
		s["default"] = f.Default
	}
	if f.Doc != "" {
		s["description"] = f.Doc
	}
	return s
}
