#!/usr/bin/env bash
# npm-deps.sh installs the real MCP servers, the TypeScript SDK client and the
# MCP Inspector CLI that the gateway's interoperability tests (internal/gateway,
# TestNPM*) run against, into a repo-local, gitignored folder (.cache/npm by
# default; override with REACH_NPM_CACHE). The Inspector needs Node 22, which
# may be newer than the system node, so Node 22 comes along (as the npm package
# node, in node_modules/node/bin). Without node and npm it prints why and exits
# 0: the Go tests then skip with the same message.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${REACH_NPM_CACHE:-$root/.cache/npm}"

# Pinned so that a run today and a run next month test the same servers.
pkgs=(
	@modelcontextprotocol/server-everything@2026.8.31
	@modelcontextprotocol/server-memory@2026.8.31
	@modelcontextprotocol/server-filesystem@2026.8.31
	@modelcontextprotocol/sdk@1.32.2
	@modelcontextprotocol/inspector@2.12.0
	node@22.23.3
)

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "npm-deps: node or npm not found; the npm interoperability test will be skipped"
	exit 0
fi

stamp="$prefix/.installed"
want="${pkgs[*]}"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	echo "npm-deps: up to date in $prefix"
	exit 0
fi

mkdir -p "$prefix"
echo "npm-deps: installing into $prefix: ${pkgs[*]}"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "${pkgs[@]}"
echo "$want" >"$stamp"
