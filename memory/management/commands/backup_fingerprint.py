"""Describe this database by what agents get from it, or compare it with an earlier
description: the check after a restore (memory.ops.backup, docs/deploy.md#backups).

  manage.py backup_fingerprint --output before.json          # before the dump
  manage.py backup_fingerprint --compare before.json         # against the restored database

With --compare it prints the teams, row counts and contexts compared and exits 1 on any
difference.
"""

import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory.ops.backup import CALLS_PER_TEAM, COUNTED, fingerprints_compare, store_fingerprint


class Command(BaseCommand):
    help = "Fingerprint the memory (row counts and replayed context calls per team), or compare with a saved one."

    def add_arguments(self, parser):
        parser.add_argument("--output", "-o", type=Path, help="write the fingerprint here (JSON)")
        parser.add_argument("--compare", type=Path, help="a fingerprint to compare this database with")
        parser.add_argument("--calls-per-team", type=int, default=CALLS_PER_TEAM,
                            help="latest context calls replayed per team (default: %(default)s)")

    def handle(self, *args, output, compare, calls_per_team, **options):
        if calls_per_team < 1:
            raise CommandError("--calls-per-team must be at least 1")
        before = None
        if compare is not None:
            try:
                before = json.loads(compare.read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:
                raise CommandError(f"cannot read {compare}: {error}") from None
        started = time.perf_counter()
        current = store_fingerprint(calls_per_team=calls_per_team)
        seconds = time.perf_counter() - started
        if output is not None:
            output.write_text(json.dumps(current, indent=1, sort_keys=True), encoding="utf-8")
        calls = sum(len(team["contexts"]) for team in current["teams"].values())
        self.stdout.write(f"fingerprint: {len(current['teams'])} teams, {calls} context calls replayed in {seconds:.1f} s")
        if before is None:
            return
        result = fingerprints_compare(before, current)
        for line in result.differences[:20]:
            self.stdout.write(f"  differs: {line}")
        tables = len(COUNTED)
        self.stdout.write(f"compared: {result.teams} teams, row counts of {tables} tables per team,"
                          f" {result.identical} of {result.contexts} context calls identical")
        if not result.same:
            raise CommandError(f"{len(result.differences)} difference(s) after the restore")
