//go:build !wasip1

// Command raw is a wasm module only (see main.go); natively it does nothing.
package main

func main() {}
