package serve

// SetBeforeBackground makes every run started with wait=false call f with
// its task id before it does anything, so a test can hold one at that
// point. Set it before the server takes requests.
func (s *Server) SetBeforeBackground(f func(id string)) { s.beforeBackground = f }
