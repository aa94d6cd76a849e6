#!/bin/sh
# Copies the tools modules under modules/, each file with a .embed suffix: a
# directory holding a go.mod is a module of its own and cannot be embedded.
# Their tests stay in tools/: the toolchain builds programs, not tests.
# Run by `go generate` (make generate); a test keeps the copies equal.
set -eu
copy() { # copy SRC DST FILE...
	src=$1 dst=$2
	shift 2
	rm -rf "$dst"
	for f in "$@"; do
		mkdir -p "$dst/$(dirname "$f")"
		cp "$src/$f" "$dst/$f.embed"
	done
}
copy ../../tools modules/cluster go.mod go.sum tools.go
sources() { # sources DIR: its Go files but tests, and nested go.mod files
	(cd "$1" && find . \( -name '*.go' ! -name '*_test.go' \) -o -name go.mod | grep -v '^\./go\.mod$' | sed 's|^\./||' | sort)
}
for m in node storage csi olmv1; do
	copy ../../tools/$m modules/$m go.mod go.sum $(sources ../../tools/$m)
done
