package wasm

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
)

// TestCodeInHugePages: a Go plugin's machine code is mapped at a 2 MiB
// boundary and advised for transparent huge pages (the wazero copy's
// second patch, third_party/README.md), whether or not the kernel then
// backs it with them: /proc/self/smaps shows an executable anonymous
// mapping of 2 MiB or more, aligned, with the "hg" (MADV_HUGEPAGE) flag.
func TestCodeInHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skip("kernel without transparent huge pages")
	}
	open(t, "echo-provider", plugintest.Wasm(t, "testdata/plugins/echo-provider"), Config{})
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	var found []string
	var start, end uint64
	var exec bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && len(fields[1]) == 4 {
			lo, hi, _ := strings.Cut(fields[0], "-")
			start, _ = strconv.ParseUint(lo, 16, 64)
			end, _ = strconv.ParseUint(hi, 16, 64)
			exec = fields[1] == "r-xp" && fields[4] == "0" && len(fields) == 5 // anonymous
			continue
		}
		if exec && strings.HasPrefix(line, "VmFlags:") && end-start >= 2<<20 {
			found = append(found, fields[0])
			if start%(2<<20) == 0 && strings.Contains(line, " hg") {
				return
			}
		}
	}
	t.Fatalf("no executable anonymous mapping of 2 MiB or more aligned and advised for huge pages (large ones: %v)", found)
}
