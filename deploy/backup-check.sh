#!/usr/bin/env bash
# `make backup-check`: the backup and restore procedure, tested end to end (docs/reliability/deploy.md).
#
# 1. a scratch source database: migrate, two teams, a LoCoMo conversation replayed through the
#    API into each (every context call is recorded in the hit ledger);
# 2. fingerprint it: row counts per team and the latest context calls replayed (record=False);
# 3. deploy/backup.sh, then deploy/restore.sh into a fresh database;
# 4. fingerprint the restored database with the same requests and compare: every context
#    call must be identical. Timings and sizes are printed at the end.
#
# PG_BASE (default postgres://postgres@127.0.0.1:5432) names the server and BACKUP_CHECK_DB
# (default memory_backup_check) the scratch databases; both are dropped and created again.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-.venv/bin/python}
base=${PG_BASE:-postgres://postgres@127.0.0.1:5432}
name=${BACKUP_CHECK_DB:-memory_backup_check}
source_url="$base/$name"
restored_url="$base/${name}_restored"
work=var/backup-check
mkdir -p "$work"
dump="$work/$name.dump"
now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

for db in "$name" "${name}_restored"; do
  psql "$base/postgres" -XAtqc "DROP DATABASE IF EXISTS \"$db\"" >/dev/null
  psql "$base/postgres" -XAtqc "CREATE DATABASE \"$db\"" >/dev/null
done

echo "== source: $source_url"
export DATABASE_URL="$source_url"
$PY manage.py migrate --noinput -v0
psql "$source_url" -XAtq -f deploy/postgres-tuning.sql
$PY manage.py seed_demo >/dev/null
$PY manage.py replay locomo/locomo5.json --conversation conv-26 --team demo --quiet
# A second team, so the snapshot and the comparison cover more than one tenant.
$PY manage.py seed_demo --team second --username second-admin >/dev/null
$PY manage.py replay locomo/locomo5.json --conversation conv-30 --team second --quiet --max-turns 200
$PY manage.py backup_fingerprint --output "$work/before.json"

echo "== backup"
started=$(now)
deploy/backup.sh "$dump"
dumped=$(now)

echo "== restore into $restored_url"
deploy/restore.sh "$dump" "$restored_url"
restored=$(now)

echo "== the restored database answers the same"
DATABASE_URL="$restored_url" $PY manage.py backup_fingerprint --compare "$work/before.json" --output "$work/after.json"
tuned=$(psql "$restored_url" -XAtqc "SELECT count(*) FROM pg_class WHERE relname LIKE 'memory_%' AND reloptions IS NOT NULL")

size=$(psql "$source_url" -XAtqc "SELECT pg_size_pretty(pg_database_size(current_database()))")
echo "== figures"
echo "source database: $size"
$PY -c 'import json, sys
for slug, team in json.load(open(sys.argv[1]))["teams"].items():
    print(f"team {slug}: " + ", ".join(f"{n} {table}" for table, n in team["counts"].items()))' "$work/before.json"
echo "pg_dump (custom format, one snapshot): $(seconds "$started" "$dumped") s, $(du -h "$dump" | cut -f1)"
echo "pg_restore into a fresh database (one transaction, then ANALYZE): $(seconds "$dumped" "$restored") s"
echo "tables with tuned autovacuum after the restore: $tuned"
