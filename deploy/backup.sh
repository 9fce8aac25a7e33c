#!/usr/bin/env bash
# Back up the whole database as ONE consistent snapshot (docs/deploy.md#backups).
#
#   DATABASE_URL=postgres://… deploy/backup.sh /backups/memory-$(date -u +%Y%m%dT%H%M%SZ).dump
#
# pg_dump reads every table inside a single repeatable-read transaction: every team's
# messages, summaries, nodes, sources, audit events and retrievals are as they were at one
# instant, while the service keeps writing. Custom format: compressed, restorable table by
# table, checked here by listing its table of contents. The file is written beside its final
# name and renamed only when complete.
set -euo pipefail

out=${1:?usage: deploy/backup.sh OUTPUT.dump   (DATABASE_URL names the database)}
url=${DATABASE_URL:?DATABASE_URL must name the PostgreSQL database to back up}
case "$url" in postgres://*|postgresql://*) ;; *) echo "backup.sh: DATABASE_URL is not PostgreSQL" >&2; exit 2 ;; esac

partial="$out.partial"
trap 'rm -f "$partial"' EXIT
pg_dump --dbname="$url" --format=custom --compress=6 --no-owner --no-privileges --file="$partial"
pg_restore --list "$partial" >/dev/null  # a truncated or corrupt file fails here, not on the day of the restore
mv "$partial" "$out"
trap - EXIT
echo "backup: $out ($(du -h "$out" | cut -f1))"
