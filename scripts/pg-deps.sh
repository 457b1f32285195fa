#!/usr/bin/env bash
# pg-deps.sh makes sure PostgreSQL's server binaries (initdb, pg_ctl) are on
# this machine for the tests that start a throwaway cluster (internal/pgtest):
# Debian's postgresql package, installed when running as root with apt-get.
# The tests start and stop their clusters themselves, on loopback ports.
set -euo pipefail

if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
	exit 0
fi
if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
	echo "pg-deps: installing Debian's postgresql"
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
	# The package starts a cluster of its own; the tests need none of it.
	(service postgresql stop || pg_ctlcluster --help >/dev/null) >/dev/null 2>&1 || true
else
	echo "pg-deps: PostgreSQL (initdb, pg_ctl) not found and cannot be installed here; the PostgreSQL tests will skip (and fail under REACH_CI)"
fi
