package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/sextant-dev/sextant/sdk"
)

// SDK says which sdk a new plugin builds against.
type SDK struct {
	// Version is the sdk version the plugin's go.mod requires.
	Version string
	// GoMod and GoSum are that sdk's go.mod and go.sum.
	GoMod, GoSum []byte
	// Sum is the go.sum line pair for the sdk module itself, when known.
	Sum []byte
	// Dir is the local sdk module the plugin's go.work uses; "" for none.
	Dir string
}

// SourceRoot returns the sextant source tree this binary was built from,
// when it is still where it was built, else "". A binary installed from a
// module proxy has none: its module's files carry no sdk/.
func SourceRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "sdk", "plugin.go")); err != nil {
		return ""
	}
	return root
}

// sdkRelease is the published sdk version this binary was built with, and
// that module's checksum, as the build recorded them. ok is false for a
// build from a checkout, whose sdk is the workspace's source (version
// "(devel)"), and for test binaries, which record no dependencies.
func sdkRelease() (version, sum string, ok bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", "", false
	}
	for _, d := range bi.Deps {
		if d.Path == sdk.ModulePath && d.Replace == nil && semver.IsValid(d.Version) {
			return d.Version, d.Sum, true
		}
	}
	return "", "", false
}

// LocateSDK decides what a new plugin builds against: the sdk of the sextant
// checkout at checkout when it is set; else the published sdk this binary
// was built with; else (a build from a checkout) the checkout it was built
// from. A checkout that is not one is refused (sdk.ErrInvalid).
func LocateSDK(checkout string) (SDK, error) {
	version, sum, released := sdkRelease()
	if checkout == "" && released {
		return publishedSDK(version, sum)
	}
	if checkout == "" {
		if checkout = SourceRoot(); checkout == "" {
			return SDK{}, invalid("this sextant was built from a checkout that is no longer where it was built; pass the path of a sextant checkout")
		}
	}
	if !released {
		version = ""
	}
	return checkoutSDK(checkout, version)
}

// publishedSDK is the sdk this binary was built with, from the module
// proxy: its files are embedded in the sdk package.
func publishedSDK(version, sum string) (SDK, error) {
	goMod, goSum := sdk.ModuleFiles()
	s := SDK{Version: version, GoMod: goMod, GoSum: goSum}
	if sum == "" {
		return s, nil
	}
	modSum, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(goMod)), nil
	})
	if err != nil {
		return SDK{}, err
	}
	s.Sum = fmt.Appendf(nil, "%s %s %s\n%s %s/go.mod %s\n", sdk.ModulePath, version, sum, sdk.ModulePath, version, modSum)
	return s, nil
}

// checkoutSDK is the sdk module of the sextant checkout at checkout. Its
// version is version when set; else the one the checkout's host module
// requires, which is what the next release publishes.
func checkoutSDK(checkout, version string) (SDK, error) {
	root, err := filepath.Abs(checkout)
	if err != nil {
		return SDK{}, err
	}
	notCheckout := func(err error) error {
		return invalid("%s is not a sextant checkout: %w", checkout, err)
	}
	s := SDK{Dir: filepath.Join(root, "sdk"), Version: version}
	name := filepath.Join(s.Dir, "go.mod")
	if s.GoMod, err = os.ReadFile(name); err != nil {
		return SDK{}, notCheckout(errors.Unwrap(err))
	}
	if mf, err := modfile.ParseLax(name, s.GoMod, nil); err != nil {
		return SDK{}, notCheckout(err)
	} else if mf.Module == nil || mf.Module.Mod.Path != sdk.ModulePath {
		return SDK{}, notCheckout(fmt.Errorf("%s is not module %s", name, sdk.ModulePath))
	}
	if s.GoSum, err = os.ReadFile(filepath.Join(s.Dir, "go.sum")); err != nil {
		return SDK{}, notCheckout(errors.Unwrap(err))
	}
	if s.Version != "" {
		return s, nil
	}
	name = filepath.Join(root, "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		return SDK{}, notCheckout(errors.Unwrap(err))
	}
	mf, err := modfile.ParseLax(name, data, nil)
	if err != nil {
		return SDK{}, notCheckout(err)
	}
	for _, r := range mf.Require {
		if r.Mod.Path == sdk.ModulePath {
			s.Version = r.Mod.Version
		}
	}
	if s.Version == "" {
		return SDK{}, notCheckout(fmt.Errorf("%s does not require %s", name, sdk.ModulePath))
	}
	return s, nil
}
