#!/usr/bin/env bash
# conformance-deps.sh installs the official MCP conformance suite and the
# Node 22 it needs (the suite's own requirement; the system node may be
# older) into .cache/conformance (gitignored; override with
# REACH_CONFORMANCE_CACHE) for internal/gateway TestConformance. It is
# idempotent: a stamp file records what was installed. Without npm it says
# so and exits 0, and the Go test skips.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${REACH_CONFORMANCE_CACHE:-$root/.cache/conformance}"

# Pinned: the scenarios change between releases.
pkgs=(
	@modelcontextprotocol/conformance@0.1.16
	node@22.23.3
)

if ! command -v npm >/dev/null 2>&1; then
	echo "conformance-deps: npm not found; TestConformance (MCP conformance suite) will be skipped"
	exit 0
fi

stamp="$prefix/.installed"
want="${pkgs[*]}"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	echo "conformance-deps: up to date in $prefix"
	exit 0
fi

mkdir -p "$prefix"
echo "conformance-deps: installing into $prefix: $want"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "${pkgs[@]}"
if [[ ! -x "$prefix/node_modules/node/bin/node" ]]; then
	echo "conformance-deps: $prefix/node_modules/node/bin/node is missing after the install" >&2
	exit 1
fi
echo "$want" >"$stamp"
