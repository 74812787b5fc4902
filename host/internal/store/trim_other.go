//go:build !linux

package store

// TrimResident is a no-op where the store cannot trim its mappings.
func (s *Store) TrimResident() {}
