package modproxy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/modproxy"
)

// TestPublish: the go command downloads a published module from the proxy
// with the checksums Publish reported, the published go.mod and go.sum
// override the tree's, and a nested module stays out of the zip.
func TestPublish(t *testing.T) {
	src := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		name = filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/pub\n\ngo 1.22\n")
	write("pub.go", "package pub\n")
	write("nested/go.mod", "module example.com/pub/nested\n")
	write("nested/n.go", "package nested\n")
	proxy := t.TempDir()
	goMod := []byte("module example.com/pub\n\ngo 1.22\n\nrequire example.com/other v1.0.0\n")
	pub, err := modproxy.Publish(proxy, modproxy.Module{Dir: src, Version: "v1.2.3-rc.1", GoMod: goMod, GoSum: []byte("")})
	if err != nil {
		t.Fatal(err)
	}
	if pub.Path != "example.com/pub" || pub.Version != "v1.2.3-rc.1" {
		t.Fatalf("published %s %s", pub.Path, pub.Version)
	}
	// Publishing again keeps one list entry.
	if _, err := modproxy.Publish(proxy, modproxy.Module{Dir: src, Version: "v1.2.3-rc.1", GoMod: goMod, GoSum: []byte("")}); err != nil {
		t.Fatal(err)
	}
	if list, err := os.ReadFile(filepath.Join(proxy, "example.com", "pub", "@v", "list")); err != nil || string(list) != "v1.2.3-rc.1\n" {
		t.Fatalf("list = %q, %v", list, err)
	}

	cache := t.TempDir()
	cmd := exec.Command("go", "mod", "download", "-json", "example.com/pub@v1.2.3-rc.1")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+filepath.ToSlash(proxy), "GOMODCACHE="+cache,
		"GOFLAGS=-modcacherw", "GONOSUMDB=example.com", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	var got struct{ Dir, Sum, GoModSum string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Sum != pub.Sum || got.GoModSum != pub.ModSum {
		t.Fatalf("go computed %s %s, Publish reported %s %s", got.Sum, got.GoModSum, pub.Sum, pub.ModSum)
	}
	if !strings.Contains(pub.SumLines(), "example.com/pub v1.2.3-rc.1/go.mod "+pub.ModSum+"\n") {
		t.Fatalf("SumLines = %q", pub.SumLines())
	}
	if data, err := os.ReadFile(filepath.Join(got.Dir, "go.mod")); err != nil || string(data) != string(goMod) {
		t.Fatalf("published go.mod = %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(got.Dir, "go.sum")); err != nil {
		t.Fatalf("the given go.sum was not published: %v", err)
	}
	if _, err := os.Stat(filepath.Join(got.Dir, "nested")); !os.IsNotExist(err) {
		t.Fatalf("the nested module is in the zip (stat: %v)", err)
	}
}

// TestPublishRefusesBadInput: no go.mod, or a version that is not
// canonical, is an error and writes nothing.
func TestPublishRefusesBadInput(t *testing.T) {
	proxy := t.TempDir()
	if _, err := modproxy.Publish(proxy, modproxy.Module{Dir: t.TempDir(), Version: "v1.0.0"}); err == nil {
		t.Fatal("published a folder without go.mod")
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := modproxy.Publish(proxy, modproxy.Module{Dir: src, Version: "1.0"}); err == nil {
		t.Fatal("published version 1.0")
	}
	if entries, err := os.ReadDir(proxy); err != nil || len(entries) > 0 {
		t.Fatalf("proxy holds %v (%v)", entries, err)
	}
}
