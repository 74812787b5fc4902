package temporal_test

import (
	"os"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
)

// TestMain removes the plugins plugintest built for this test binary.
func TestMain(m *testing.M) {
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}
