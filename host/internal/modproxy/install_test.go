package modproxy_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/sextant-dev/sextant/host/internal/modproxy"
	"github.com/sextant-dev/sextant/sdk"
)

// testVersion is the version both modules are published as: a prerelease no
// real release will ever use.
const testVersion = "v0.99.0-test"

// hostModules match module paths that belong to the host and must never be
// in a plugin's module graph.
var hostModules = regexp.MustCompile(`^github\.com/sextant-dev/sextant$|badger|temporal|chromedp|wazero|ristretto|expr-lang|spf13/cobra|modelcontextprotocol`)

// TestGoInstall publishes the working tree's two modules to a file-system
// module proxy as a release would tag them (the host's go.mod requiring the
// sdk at the same version, its go.sum holding the sdk's checksums), installs
// sextant from it with `go install …/cmd/sextant@VERSION` as users do, and
// builds one plugin of each kind that the installed sextant scaffolds, which
// must need the sdk module alone.
func TestGoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("installs sextant and builds four plugins with the go command from a module proxy")
	}
	ctx := t.Context()
	if dl, ok := t.Deadline(); ok {
		// End the go commands before go test's timeout ends this process and
		// leaves them running.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-30*time.Second))
		defer cancel()
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	proxy := filepath.Join(work, "proxy")

	sdkPub, err := modproxy.Publish(proxy, modproxy.Module{Dir: filepath.Join(root, "sdk"), Version: testVersion})
	if err != nil {
		t.Fatal(err)
	}
	goMod, goSum := releaseModFiles(t, root, sdkPub)
	if _, err := modproxy.Publish(proxy, modproxy.Module{Dir: root, Version: testVersion, GoMod: goMod, GoSum: goSum}); err != nil {
		t.Fatal(err)
	}

	// Everything else comes from the module cache this machine already has
	// (itself a proxy layout), then from the usual proxy. A fresh module
	// cache keeps the test versions out of the shared one; -modcacherw lets
	// TempDir remove it, and -trimpath keys the build cache by module
	// version rather than by this run's directory.
	realCache := goEnv(t, "GOMODCACHE")
	env := append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(realCache, "cache", "download"))+","+goEnv(t, "GOPROXY"),
		"GOMODCACHE="+filepath.Join(work, "modcache"),
		"GOFLAGS=-modcacherw -trimpath",
		"GONOSUMDB=github.com/sextant-dev/*",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GOBIN="+filepath.Join(work, "bin"),
	)
	run := func(dir string, extra []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, append(env, extra...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out) + stderr.String()
	}

	start := time.Now()
	run(work, nil, "go", "install", "github.com/sextant-dev/sextant/cmd/sextant@"+testVersion)
	t.Logf("go install sextant@%s: %v", testVersion, time.Since(start).Round(time.Second))
	sextant := filepath.Join(work, "bin", "sextant")
	if out := run(work, nil, sextant, "version"); !strings.HasPrefix(out, "sextant "+testVersion+" (") {
		t.Fatalf("sextant version = %q, want sextant %s (…)", out, testVersion)
	}
	// The binary was built against the published sdk, not a local one.
	wantDep := regexp.MustCompile(`(?m)^\s+dep\s+` + regexp.QuoteMeta(sdk.ModulePath) + `\s+` + regexp.QuoteMeta(testVersion) + `\s+` + regexp.QuoteMeta(sdkPub.Sum) + `$`)
	if out := run(work, nil, "go", "version", "-m", sextant); !wantDep.MatchString(out) {
		t.Fatalf("go version -m: no dep %s %s %s in\n%s", sdk.ModulePath, testVersion, sdkPub.Sum, out)
	}

	plugins := filepath.Join(work, "plugins")
	readonly := []string{"GOFLAGS=-modcacherw -trimpath -mod=readonly"}
	for _, kind := range []string{"navigator", "provider", "gate", "tool"} {
		name := "my-" + kind
		dir := filepath.Join(plugins, name)
		out := run(work, nil, sextant, "plugins", "init", "--kind", kind, "--dir", plugins, name)
		if !strings.Contains(out, "(sdk "+testVersion+")") {
			t.Fatalf("plugins init: %q does not name sdk %s alone", out, testVersion)
		}
		if _, err := os.Stat(filepath.Join(dir, "go.work")); !os.IsNotExist(err) {
			t.Fatalf("a released sextant wrote a go.work (stat: %v)", err)
		}
		checkPluginGoMod(t, filepath.Join(dir, "go.mod"))
		sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(sum, []byte(sdkPub.SumLines())) {
			t.Fatalf("go.sum lacks the sdk's checksums:\n%s", sdkPub.SumLines())
		}

		// -mod=readonly: go.mod and go.sum as written are complete.
		start := time.Now()
		run(dir, readonly, "go", "build", "-o", name, ".")
		run(dir, append(readonly, "GOOS=wasip1", "GOARCH=wasm"), "go", "build", "-buildmode=c-shared", "-o", name+".wasm", ".")
		for _, m := range strings.Fields(run(dir, readonly, "go", "list", "-m", "-e", "-f", "{{.Path}}", "all")) {
			if hostModules.MatchString(m) {
				t.Errorf("%s: module graph holds %s", name, m)
			}
		}
		for _, m := range strings.Fields(run(dir, readonly, "go", "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}}{{end}}", "./...")) {
			if hostModules.MatchString(m) || strings.HasPrefix(m, "go.opentelemetry.io/") {
				t.Errorf("%s: builds a package of %s", name, m)
			}
		}
		t.Logf("%s: built natively and to wasm in %v", name, time.Since(start).Round(time.Second))
	}
	run(filepath.Join(plugins, "my-gate"), readonly, "go", "test", "./...")
}

// releaseModFiles returns the host's go.mod and go.sum as a release commit
// has them: requiring the sdk at the version published with it, whose
// checksums go.sum holds.
func releaseModFiles(t *testing.T, root string, sdkPub modproxy.Published) (goMod, goSum []byte) {
	t.Helper()
	name := filepath.Join(root, "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse(name, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mf.Replace) > 0 {
		t.Fatalf("go.mod has replace directives, which go install refuses")
	}
	if err := mf.AddRequire(sdkPub.Path, sdkPub.Version); err != nil {
		t.Fatal(err)
	}
	if goMod, err = mf.Format(); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for line := range strings.Lines(string(sum)) {
		if !strings.HasPrefix(line, sdkPub.Path+" ") {
			b.WriteString(line)
		}
	}
	b.WriteString(sdkPub.SumLines())
	return goMod, b.Bytes()
}

// checkPluginGoMod: a scaffolded go.mod requires the sdk at the test
// version, replaces nothing and requires nothing of the host.
func checkPluginGoMod(t *testing.T, name string) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse(name, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mf.Replace) > 0 {
		t.Errorf("%s replaces %v", name, mf.Replace[0].Old)
	}
	found := false
	for _, r := range mf.Require {
		if r.Mod.Path == sdk.ModulePath {
			found = r.Mod.Version == testVersion
		}
		if hostModules.MatchString(r.Mod.Path) {
			t.Errorf("%s requires %s", name, r.Mod.Path)
		}
	}
	if !found {
		t.Errorf("%s does not require %s %s:\n%s", name, sdk.ModulePath, testVersion, data)
	}
}

// goEnv returns the go command's value for key.
func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}
