#!/usr/bin/env bash
# Measures the README's two commands the way a newcomer meets them: a clean
# clone of HEAD, Go's build and module caches and chartpilot's cache empty
# (fresh directories, so that the caches of whoever runs this are left
# alone), then the same command again with those caches warm. Appends one
# row per run to docs/first-run.md, naming the date, the machine and the
# commit.
#
#   scripts/first-run.sh test    # bash .ci/run (what CI runs: make test)
#   scripts/first-run.sh demo    # make demo
#   scripts/first-run.sh both    # demo, then the tests on fresh caches again
#
# KEEP=1 keeps the work directory (the clone, the caches, the logs).
# REF=<commit or branch> measures that commit instead of HEAD (of this
# checkout, a worktree's branch included; uncommitted changes are not cloned).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
what=${1:-both}
case $what in test | demo | both) ;; *) echo "usage: $0 test|demo|both" >&2; exit 2 ;; esac

work=$(mktemp -d /tmp/chartpilot-first-run.XXXXXX)
cleanup() {
	if [ -z "${KEEP:-}" ]; then
		chmod -R u+w "$work" 2>/dev/null || true
		rm -rf "$work"
	else
		echo "kept $work"
	fi
}
trap cleanup EXIT

commit=$(git rev-parse --short "${REF:-HEAD}")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)
machine="$(hostname), $(nproc) cores ($cpu), $mem"
results=$repo/docs/first-run.md

# fresh gives a new clone and empty caches under $work/$1.
fresh() {
	local dir=$work/$1
	mkdir -p "$dir/cache/go-build" "$dir/cache/xdg" "$dir/gopath"
	git clone --quiet --no-hardlinks "$repo" "$dir/src"
	git -C "$dir/src" checkout --quiet "$commit"
}

# measure LABEL DIR CACHE-STATE COMMAND... runs the command in DIR's clone
# with DIR's caches and appends its row.
measure() {
	local label=$1 dir=$work/$2 state=$3
	shift 3
	local log=$work/$label.log start end rc=0
	echo "== $label ($state caches): $* (log $log)"
	start=$(date +%s)
	(
		cd "$dir/src"
		export GOCACHE=$dir/cache/go-build GOPATH=$dir/gopath GOMODCACHE=$dir/gopath/pkg/mod
		export XDG_CACHE_HOME=$dir/cache/xdg GOFLAGS=-modcacherw
		# The chart corpus the tests take sits beside the repository, not
		# beside the clone.
		if [ -z "${CHARTPILOT_CORPUS:-}" ] && [ -d "$repo/../shared/charts" ]; then
			export CHARTPILOT_CORPUS=$repo/../shared/charts
		fi
		/usr/bin/time -f '%e %U %S' -o "$work/$label.time" "$@"
	) >"$log" 2>&1 || rc=$?
	end=$(date +%s)
	# The last line: time writes "Command exited with non-zero status N" first on a failure.
	read -r wall user sys < <(tail -1 "$work/$label.time") || true
	local result=passed
	[ "$rc" = 0 ] || result="failed (exit $rc; last lines: $(tail -3 "$log" | tr '\n' ' ' | cut -c1-200))"
	local row
	row=$(printf '| %s | %s | `%s` | %s | %s | %s | %s | %s |' \
		"$(date -u +%Y-%m-%d)" "$commit" "$*" "$state" \
		"$(fmt "$((end - start))")" "$(fmt "${user%.*}")+$(fmt "${sys%.*}")" "$result" "$machine")
	echo "$row"
	if [ ! -f "$results" ]; then
		printf '%s\n' "# First runs, measured" "" \
			"Written by \`scripts/first-run.sh\`: a clean clone, Go's build and module caches and chartpilot's" \
			"cache empty (cold), then the same command again (warm). CPU is user+sys of every process." "" \
			"| date | commit | command | caches | wall | CPU | result | machine |" \
			"|---|---|---|---|---|---|---|---|" >"$results"
	fi
	echo "$row" >>"$results"
	return "$rc"
}

fmt() { printf '%dm%02ds' "$(($1 / 60))" "$(($1 % 60))"; }

rc=0
if [ "$what" = demo ] || [ "$what" = both ]; then
	fresh demo
	measure demo-cold demo cold make demo || rc=1
	measure demo-warm demo warm make demo || rc=1
fi
if [ "$what" = test ] || [ "$what" = both ]; then
	fresh test
	measure test-cold test cold env CI=true bash .ci/run || rc=1
	measure test-warm test warm env CI=true bash .ci/run || rc=1
fi
exit $rc
