package serve

// SetBeforeBackground makes every run started with wait=false call f with
// its task id before it does anything, so a test can hold one at that
// point. Set it before the server takes requests.
func (s *Server) SetBeforeBackground(f func(id string)) { s.beforeBackground = f }

// SetDecodeBudget sets the decode budget's limit and a hook every API
// body calls once its cost is charged, before it is decoded, with what
// the requests being served hold charged then. Set it before the server
// takes requests.
func (s *Server) SetDecodeBudget(limit int64, charged func(used int64)) {
	s.decoded.Limit = limit
	s.afterCharge = func() { charged(s.decoded.Used()) }
}

// DecodeUsed is what the requests being served hold charged to the
// decode budget.
func (s *Server) DecodeUsed() int64 { return s.decoded.Used() }
