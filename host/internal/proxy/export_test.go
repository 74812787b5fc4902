package proxy

// BudgetUsed is what the calls being served hold charged to the decode
// budget.
func (p *Proxy) BudgetUsed() int64 {
	p.budget.mu.Lock()
	defer p.budget.mu.Unlock()
	return p.budget.used
}
