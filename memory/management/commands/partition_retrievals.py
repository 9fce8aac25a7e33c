"""Partition the retrievals table by month on PostgreSQL (memory.ops.partitions; docs/deploy.md).

  manage.py partition_retrievals --dry-run            # print the SQL of the conversion, change nothing
  manage.py partition_retrievals --apply              # convert memory_retrieval, online
  manage.py partition_retrievals --ensure             # create the coming months (beat also does it daily)
  manage.py partition_retrievals --detach 2026-01     # retention: detach a month (its feedback deleted)
  manage.py partition_retrievals --list               # the partitions and their rows
"""

import time

from django.core.management.base import BaseCommand, CommandError

from memory.ops import partitions as parts


class Command(BaseCommand):
    help = "Convert memory_retrieval into monthly range partitions (PostgreSQL), keep months ahead, detach old ones."

    def add_arguments(self, parser):
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--dry-run", action="store_true", help="print the conversion's SQL; change nothing")
        action.add_argument("--apply", action="store_true", help="convert the table (keeps memory_retrieval_unpartitioned)")
        action.add_argument("--ensure", action="store_true", help="create the missing partitions of the coming months")
        action.add_argument("--detach", metavar="YYYY-MM", help="detach that month's partition, deleting its feedback")
        action.add_argument("--list", action="store_true", help="list the partitions with their row counts")
        parser.add_argument("--months-ahead", type=int, default=parts.MONTHS_AHEAD,
                            help="months created after the current one (default: %(default)s)")
        parser.add_argument("--batch-rows", type=int, default=parts.BATCH_ROWS,
                            help="ids copied per transaction (default: %(default)s)")

    def handle(self, *args, months_ahead: int, batch_rows: int, **options):
        if not 0 <= months_ahead <= 24:
            raise CommandError("--months-ahead must be 0–24")
        if batch_rows < 1:
            raise CommandError("--batch-rows must be at least 1")
        runner = parts.Runner(dry_run=options["dry_run"], out=self.stdout.write)
        started = time.perf_counter()
        try:
            if options["dry_run"] or options["apply"]:
                result = parts.convert(runner, months_ahead=months_ahead, batch_rows=batch_rows)
                if options["apply"]:
                    self.stdout.write(f"memory_retrieval partitioned: {result['rows']} rows in {result['partitions']} "
                                      f"monthly partitions and a default one, copied in {result['batches']} batches, "
                                      f"{time.perf_counter() - started:.2f} s, the swap held the table "
                                      f"{result['swap_ms']} ms. The old table is "
                                      "memory_retrieval_unpartitioned: compare, then DROP TABLE it.")
            elif options["ensure"]:
                created = parts.ensure_ahead(runner, months_ahead=months_ahead)
                self.stdout.write(f"created: {', '.join(created)}" if created else "every coming month has its partition")
            elif options["detach"]:
                month = parts.parse_month(options["detach"])
                result = {**parts.detach(runner, month), "name": parts.partition_name(month)}
                self.stdout.write(f"detached {result['name']}: {result['retrievals']} retrievals (a plain table now: "
                                  f"archive it with pg_dump -t {result['name']}, then DROP TABLE it); "
                                  f"{result['feedback']} feedback rows deleted")
            else:
                for name in parts.partitions(runner):
                    self.stdout.write(f"{name}\t{runner.value(f'SELECT count(*) FROM {name}')}")
        except parts.PartitionError as error:
            raise CommandError(str(error)) from None
