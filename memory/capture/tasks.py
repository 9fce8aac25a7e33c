"""Celery tasks (R-EXTRACT): thin, by id; the work is in memory.capture.jobs and services."""

from celery import shared_task
from django_scopes import scopes_disabled

from accounts.models import Team
from memory.capture.jobs import job_run, jobs_sweep
from memory.services.maintenance import nodes_expire_due, statistics_refresh


@shared_task(name="memory.capture.tasks.run_capture_job", ignore_result=True)
def run_capture_job(job_id: int) -> None:
    job_run(job_id)


@shared_task(name="memory.capture.tasks.sweep_jobs", ignore_result=True)
def sweep_jobs() -> dict:
    return jobs_sweep()


@shared_task(name="memory.capture.tasks.sweep_expired", ignore_result=True)
def sweep_expired() -> int:
    """Mark nodes past expires_at expired, team by team, each audited as system:expiry; then
    refresh SQLite's planner statistics (memory.services.maintenance.statistics_refresh)."""
    with scopes_disabled():
        teams = list(Team.objects.all())
    expired = sum(len(nodes_expire_due(team=team)) for team in teams)
    statistics_refresh()
    return expired
