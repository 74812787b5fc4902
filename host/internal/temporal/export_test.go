package temporal

// SetNotFoundHook sets the hook run when a call to a workflow is refused
// as NotFound, before the workflow is looked up; nil removes it.
func SetNotFoundHook(f func(task string)) { notFoundHook = f }
