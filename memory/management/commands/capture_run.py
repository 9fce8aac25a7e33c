"""Run background capture now, without waiting for the beat: record jobs for the sessions'
uncaptured tail messages and run every due pending job (R-EXTRACT). Useful after a replay
and on the embedded setup; with a broker, the jobs go to the workers."""

from django.core.management.base import BaseCommand
from django.utils import timezone
from django_scopes import scopes_disabled

from config.celery import app as celery_app
from memory.capture.jobs import jobs_sweep
from memory.capture.triggers import background_join
from memory.capture_models import CaptureJob, JobStatus
from memory.services.maintenance import statistics_refresh


class Command(BaseCommand):
    help = "Capture every session's uncaptured messages now and run due jobs."

    def add_arguments(self, parser):
        parser.add_argument("--idle-seconds", type=int, default=0,
                            help="only sessions quiet at least this long (default 0: all)")

    def handle(self, *args, **options):
        background_join()  # a job an agent's request started on a thread here finishes first
        with scopes_disabled():
            done_before = CaptureJob.objects.filter(status=JobStatus.DONE).count()
        total = {"created": 0, "due": 0, "queued": 0}
        for _ in range(1000):  # in-process, each pass finishes its jobs; with a broker, one pass hands them over
            counts = jobs_sweep(now=timezone.now(), idle_seconds=options["idle_seconds"], limit=500)
            for name, value in counts.items():
                total[name] += value
            if not celery_app.conf.task_always_eager or (counts["due"] == 0 and counts["created"] == 0):
                break
        with scopes_disabled():
            done = CaptureJob.objects.filter(status=JobStatus.DONE).count() - done_before
            pending = CaptureJob.objects.filter(status=JobStatus.PENDING).count()
        statistics_refresh()  # SQLite's planner statistics, as the beat's expiry sweep does
        where = "in-process" if celery_app.conf.task_always_eager else "by the workers so far"
        self.stdout.write(f"capture: {total['created']} jobs recorded, {done} done {where}, {pending} pending")
