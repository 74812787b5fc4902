package wasm

// The test plugins written in WebAssembly text (testdata/plugins/*-wat*)
// are committed with their .wasm; this rebuilds both and their manifests'
// sha256 (needs wabt's wat2wasm).
//go:generate go run ./internal/watgen ../../../..
