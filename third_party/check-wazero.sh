#!/bin/sh
# check-wazero.sh: checks that third_party/wazero is exactly upstream wazero
# (its non-test sources, as selected below) with third_party/wazero.patch
# applied, so the copy never drifts from what README.md describes.
#
#   third_party/check-wazero.sh           check (make lint runs it)
#   third_party/check-wazero.sh --diff    print the copy's diff from upstream
#                                         (to refresh wazero.patch)
set -eu
cd "$(dirname "$0")"
version=v1.12.0
upstream=$(cd .. && GOFLAGS=-mod=mod go mod download -json "github.com/tetratelabs/wazero@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$upstream" ] || { echo "check-wazero: wazero $version not downloaded" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/a"
# What the copy keeps: the sources a build compiles, their licence, go.mod.
(cd "$upstream" && find . -type f \( \( -name '*.go' ! -name '*_test.go' \) -o -name '*.s' \
	-o -name go.mod -o -name LICENSE -o -name NOTICE \) \
	! -path '*/testdata/*' ! -path './cmd/*' ! -path './examples/*' \
	! -path './internal/integration_test/*' ! -path './internal/testing/*' |
	tar cf - -T -) | tar xf - -C "$tmp/a"
chmod -R u+w "$tmp/a"

if [ "${1:-}" = "--diff" ]; then
	cp -R wazero "$tmp/b"
	(cd "$tmp" && diff -ruN a b) | sed 's/^\(---\|+++\) \([^	]*\)	.*/\1 \2/' || true
	exit 0
fi
(cd "$tmp/a" && git apply -p1 "$OLDPWD/wazero.patch")
if ! diff -r "$tmp/a" wazero >"$tmp/diff"; then
	echo "check-wazero: third_party/wazero is not wazero $version + wazero.patch:" >&2
	cat "$tmp/diff" >&2
	exit 1
fi
echo "check-wazero: third_party/wazero = wazero $version + wazero.patch"
