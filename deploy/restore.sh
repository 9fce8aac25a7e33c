#!/usr/bin/env bash
# Restore a dump made by deploy/backup.sh into a FRESH, empty database (docs/deploy.md#backups).
#
#   createdb -h db.internal -U postgres memory_restored
#   deploy/restore.sh /backups/memory-….dump postgres://postgres@db.internal:5432/memory_restored
#
# All or nothing: one transaction, stopped at the first error. Refuses a database that
# already has tables, so a restore never mixes with live data. Planner statistics are not
# part of a dump: ANALYZE runs afterwards so the first queries get good plans.
set -euo pipefail

dump=${1:?usage: deploy/restore.sh DUMP TARGET_DATABASE_URL}
url=${2:?usage: deploy/restore.sh DUMP TARGET_DATABASE_URL}
[ -f "$dump" ] || { echo "restore.sh: no such file: $dump" >&2; exit 2; }

tables=$(psql "$url" -XAtqc "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
if [ "$tables" != "0" ]; then
  echo "restore.sh: the target database already has $tables tables; restore into a fresh database" >&2
  exit 3
fi
pg_restore --dbname="$url" --no-owner --no-privileges --exit-on-error --single-transaction "$dump"
psql "$url" -XAtqc "ANALYZE"
echo "restore: $dump -> $(psql "$url" -XAtqc "SELECT current_database()")"
