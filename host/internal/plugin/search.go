package plugin

import "github.com/sextant-dev/sextant/sdk"

// Find discovers the plugins a pipeline in pipelineDir can use: those on
// the search path ([SearchPath] of flags and pipelineDir), then the
// builtins linked into this binary (sdk.Registered). Problems with
// individual plugins come back as err beside the entries that are fine.
func Find(flags []string, pipelineDir string) ([]Entry, error) {
	return Discover(SearchPath(flags, pipelineDir), sdk.Registered())
}

// Search is a registry over the plugins [Find] finds, failing on any bad
// plugin.
func Search(flags []string, pipelineDir string, opts ...Option) (*Registry, error) {
	entries, err := Find(flags, pipelineDir)
	if err != nil {
		return nil, err
	}
	return NewRegistry(entries, opts...), nil
}
