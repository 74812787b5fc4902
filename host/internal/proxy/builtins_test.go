package proxy

// The tests load pipelines that name the first-party navigators and
// providers (bpmn, chain, script): link them as the sextant binary does.
import _ "github.com/sextant-dev/sextant/host/internal/builtins"
