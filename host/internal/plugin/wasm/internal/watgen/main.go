// Command watgen rebuilds the test plugins written in WebAssembly text: for
// every testdata/plugins/*/NAME.wat it runs wabt's wat2wasm into NAME.wasm
// and writes the new digest into the sha256 line of the folder's
// plugin.toml. Run it through `go generate ./host/plugin/wasm`.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

var shaLine = regexp.MustCompile(`(?m)^sha256 = "[0-9a-f]*"$`)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	wats, err := filepath.Glob(filepath.Join(root, "testdata", "plugins", "*", "*.wat"))
	if err == nil && len(wats) == 0 {
		err = fmt.Errorf("no testdata/plugins/*/*.wat under %s", root)
	}
	for _, wat := range wats {
		if err != nil {
			break
		}
		err = build(wat)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "watgen:", err)
		os.Exit(1)
	}
}

func build(wat string) error {
	out := strings.TrimSuffix(wat, ".wat") + ".wasm"
	if b, err := exec.Command("wat2wasm", "-o", out, wat).CombinedOutput(); err != nil {
		return fmt.Errorf("wat2wasm %s: %v\n%s", wat, err, b)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(bin)
	manifest := filepath.Join(filepath.Dir(wat), "plugin.toml")
	toml, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	if !shaLine.Match(toml) {
		return fmt.Errorf("%s: no sha256 line", manifest)
	}
	toml = shaLine.ReplaceAll(toml, []byte(`sha256 = "`+hex.EncodeToString(sum[:])+`"`))
	if err := os.WriteFile(manifest, toml, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d bytes, sha256 %x\n", out, len(bin), sum)
	return nil
}
