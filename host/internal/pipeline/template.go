package pipeline

import (
	"encoding/json"
	"strings"
	"text/template"
)

// TemplateFuncs are the functions prompt, system and action templates may
// call. `playbook` renders the strategy's playbook compactly; the run
// supplies the real one with Funcs, this one only lets templates parse.
var TemplateFuncs = template.FuncMap{
	"playbook": func() string { return "" },
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
	"trim":  strings.TrimSpace,
}

// ParseTemplate parses a step template with TemplateFuncs.
func ParseTemplate(name, src string) (*template.Template, error) {
	return template.New(name).Funcs(TemplateFuncs).Option("missingkey=zero").Parse(src)
}

func (l *loader) template(src string, path ...string) {
	if src == "" {
		return
	}
	if _, err := ParseTemplate(strings.Join(path, "."), src); err != nil {
		msg := err.Error()
		if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "template: ") && i > 0 {
			msg = strings.TrimPrefix(msg, "template: ")
		}
		l.add(path, "bad template: %s", msg)
	}
}
