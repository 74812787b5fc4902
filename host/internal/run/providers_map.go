package run

import "sort"

// Map returns a router whose providers are f applied to each of r's, in
// name order (replay builds recorded-only providers this way).
func (r *Providers) Map(f func(*Provider) *Provider) *Providers {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	ps := make([]*Provider, 0, len(names))
	for _, n := range names {
		ps = append(ps, f(r.byName[n]))
	}
	return NewProviders(r.logger, ps...)
}
