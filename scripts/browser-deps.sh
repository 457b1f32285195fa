#!/usr/bin/env bash
# browser-deps.sh installs what the web UI's browser test needs: Debian's
# chromium (when running as root with apt-get) and playwright-core from npm
# into a repo-local, gitignored folder (.cache/browser; override with
# REACH_BROWSER_CACHE). Without them the test skips and says why.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${REACH_BROWSER_CACHE:-$root/.cache/browser}"

if ! command -v chromium >/dev/null 2>&1; then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		echo "browser-deps: installing Debian's chromium"
		apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
	else
		echo "browser-deps: chromium not found and cannot be installed here; the browser test will be skipped"
	fi
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "browser-deps: npm not found; the browser test will be skipped"
	exit 0
fi
want="playwright-core@1.65.1"
stamp="$prefix/.installed"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	exit 0
fi
mkdir -p "$prefix"
echo "browser-deps: installing $want into $prefix"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$want"
echo "$want" >"$stamp"
