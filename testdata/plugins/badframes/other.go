//go:build !unix

// Command badframes is unix only (the frame transport is).
package main

func main() {}
