#!/usr/bin/env bash
# a2a-deps.sh installs what the gateway's A2A interoperability tests
# (internal/gateway, TestA2AAgents*) run their agents with: the A2A JS SDK
# (server and client), express for its server, and the MCP TypeScript SDK
# for the agents' tool calls, into a repo-local, gitignored folder
# (.cache/a2a by default; override with REACH_A2A_CACHE). The agents' own
# code is in internal/gateway/testdata/a2a. Without node and npm it prints
# why and exits 0: the Go tests then skip with the same message (and fail
# under make test, where REACH_CI is set).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${REACH_A2A_CACHE:-$root/.cache/a2a}"

# Pinned so that a run today and a run next month test the same SDKs.
pkgs=(
	@a2a-js/sdk@1.3.0
	express@5.3.0
	@modelcontextprotocol/sdk@1.32.2
)

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "a2a-deps: node or npm not found; the A2A agent tests will be skipped"
	exit 0
fi

stamp="$prefix/.installed"
want="${pkgs[*]}"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	echo "a2a-deps: up to date in $prefix"
	exit 0
fi

mkdir -p "$prefix"
echo "a2a-deps: installing into $prefix: ${pkgs[*]}"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --save-exact "${pkgs[@]}"
echo "$want" >"$stamp"
