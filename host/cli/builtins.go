package cli

// The first-party plugins linked into sextant as builtins: package
// builtins imports them (each registers itself with sdk.Register in init)
// and is the only host package that does; the registry lists them last on
// the search path, so an installed plugin of the same name overrides one.
import _ "github.com/sextant-dev/sextant/host/internal/builtins"
