#!/bin/sh
# Copies the tools modules under modules/, each file with a .embed suffix: a
# directory holding a go.mod is a module of its own and cannot be embedded.
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
copy ../../tools/node modules/node go.mod go.sum $(cd ../../tools/node && find . -name '*.go' | sed 's|^\./||' | sort)
copy ../../tools/storage modules/storage go.mod go.sum $(cd ../../tools/storage && find . -name '*.go' | sed 's|^\./||' | sort)
copy ../../tools/csi modules/csi go.mod go.sum $(cd ../../tools/csi && find . -name '*.go' | sed 's|^\./||' | sort)
copy ../../tools/olmv1 modules/olmv1 go.mod go.sum $(cd ../../tools/olmv1 && find . -name '*.go' -o -name go.mod | grep -v '^./go.mod$' | sed 's|^\./||' | sort)
