package cli

// The first-party plugins linked into sextant as builtins. Each package
// registers itself with sdk.Register in init; the registry lists them last
// on the search path, so an installed plugin of the same name overrides one.
import (
	_ "github.com/sextant-dev/sextant/navigators/bpmn"
	_ "github.com/sextant-dev/sextant/navigators/chain"
	_ "github.com/sextant-dev/sextant/navigators/dag"
	_ "github.com/sextant-dev/sextant/plugins/anthropic"
	_ "github.com/sextant-dev/sextant/plugins/openai"
	_ "github.com/sextant-dev/sextant/plugins/records"
	_ "github.com/sextant-dev/sextant/plugins/script"
)
