package proxy

// BudgetUsed is what the calls being served hold charged to the decode
// budget.
func (p *Proxy) BudgetUsed() int64 { return p.budget.Used() }
