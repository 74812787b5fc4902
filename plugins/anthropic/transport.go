package anthropic

import "github.com/sextant-dev/sextant/plugins/internal/llmhttp"

// web is this provider's only way out: every request goes through
// llmhttp, which calls sdk.HTTP (the host's allow-listed http function in
// a wasm module) and turns failures into typed errors named after Name.
var web = llmhttp.Client{Name: Name}
