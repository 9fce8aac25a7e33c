#!/usr/bin/env bash
# `make bench`: the spine benchmark on SQLite, then on PostgreSQL, then one summary table.
# Extra arguments go to both runs (e.g. benchmarks/bench.sh --quick, or --investigate).
# Never touches the developer database: SQLite runs in var/bench.sqlite3, PostgreSQL in the
# database memory_bench (dropped and recreated) on the server of BENCH_PG_URL.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/memory_bench}
export DJANGO_SETTINGS_MODULE=config.settings
started=$(date +%s)

echo "### SQLite"
DATABASE_URL="sqlite:///$(pwd)/var/bench.sqlite3" "$PY" benchmarks/run.py "$@"

echo
echo "### PostgreSQL"
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    echo "PostgreSQL is down; starting it"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
DATABASE_URL="$PG_URL" "$PY" benchmarks/run.py "$@"

"$PY" benchmarks/report.py var/bench-results-sqlite.json var/bench-results-postgresql.json
echo "both databases in $(( $(date +%s) - started )) s"
