package replay

import "context"

// SetRunHooks sets the hooks Run calls (testBeforeTask, testRunWaits)
// until the returned function restores them.
func SetRunHooks(before func(ctx context.Context, i int), waits func()) (restore func()) {
	b, w := testBeforeTask, testRunWaits
	testBeforeTask, testRunWaits = before, waits
	return func() { testBeforeTask, testRunWaits = b, w }
}
