// Package plugin finds, verifies and opens sextant plugins: plugin.toml
// manifests, the search path, and a registry that resolves a plugin name to
// one of three transports — builtin (linked in), wasm (wazero, package
// plugin/wasm) or process (go-plugin, package plugin/process) — behind the
// same sdk interfaces.
//
// It must not know any particular plugin: builtins arrive through
// sdk.Registered.
package plugin
