package schema

import "github.com/sextant-dev/sextant/sdk"

// A plugin declares its settings as sdk.ConfigField, the wire form every
// transport sends (package sdk cannot import the host). These two
// functions are the only translation between that vocabulary and Field:
// the loader checks a plugin's block with FromConfig's fields, and a
// built-in plugin declared here describes itself with ToConfig's.

// configTypes maps sdk.ConfigField.Type to a field type.
var configTypes = map[string]Type{
	"string": String, "number": Number, "bool": Bool, "duration": Duration, "list": StringList, "table": Table,
}

// FromConfig returns the fields a plugin's declared settings are checked
// with. A type the host does not know accepts any value, so a plugin built
// for a newer vocabulary still loads; a table is open (its keys are the
// plugin's).
func FromConfig(cf []sdk.ConfigField) []Field {
	out := make([]Field, 0, len(cf))
	for _, c := range cf {
		t, ok := configTypes[c.Type]
		if !ok {
			t = Any
		}
		f := Field{Name: c.Name, Type: t, Required: c.Required, Default: c.Default, Doc: c.Doc}
		if t == Table {
			f.Block = &Block{Open: true}
		}
		out = append(out, f)
	}
	return out
}

// ToConfig returns fields as a plugin's declared settings (sdk.Info.Config):
// integers are numbers there, and every kind of table is a table. What
// ConfigField cannot say (bounds, allowed values) stays in the Field.
func ToConfig(fs []Field) []sdk.ConfigField {
	out := make([]sdk.ConfigField, 0, len(fs))
	for _, f := range fs {
		out = append(out, sdk.ConfigField{Name: f.Name, Type: configType(f.Type), Default: f.Default, Required: f.Required, Doc: f.Doc})
	}
	return out
}

func configType(t Type) string {
	switch t {
	case Int, Number:
		return "number"
	case Bool:
		return "bool"
	case Duration:
		return "duration"
	case StringList:
		return "list"
	case Table, TableMap, TableArray, StringMap, NumberMap, RangeMap:
		return "table"
	case Any:
		return "any"
	}
	return "string"
}
