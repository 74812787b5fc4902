package script

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestRuleKeysDocumented(t *testing.T) {
	var decoded []string
	rt := reflect.TypeFor[rule]()
	for i := range rt.NumField() {
		if tag, ok := rt.Field(i).Tag.Lookup("toml"); ok {
			decoded = append(decoded, strings.Split(tag, ",")[0])
		}
	}
	var documented []string
	for _, f := range RuleKeys {
		documented = append(documented, f.Name)
	}
	if !slices.Equal(documented, decoded) {
		t.Errorf("RuleKeys = %q, the provider decodes %q", documented, decoded)
	}
	decoded, documented = nil, nil
	ct := reflect.TypeFor[toolCall]()
	for i := range ct.NumField() {
		if tag, ok := ct.Field(i).Tag.Lookup("toml"); ok {
			decoded = append(decoded, strings.Split(tag, ",")[0])
		}
	}
	for _, f := range ToolCallKeys {
		documented = append(documented, f.Name)
	}
	if !slices.Equal(documented, decoded) {
		t.Errorf("ToolCallKeys = %q, the provider decodes %q", documented, decoded)
	}
	ft := reflect.TypeFor[rulesFile]()
	if ft.NumField() != 2 || ft.Field(0).Tag.Get("toml") != "rule" || ft.Field(1).Tag.Get("toml") != "default" {
		t.Errorf("the rules file has other tables than [[rule]] and [default]: update docs (scriptProviderIntro)")
	}
}
