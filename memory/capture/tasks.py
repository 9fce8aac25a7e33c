"""Celery tasks (R-EXTRACT): thin, by id; the work is in memory.capture.jobs and services."""

from celery import shared_task
from django.conf import settings
from django_scopes import scopes_disabled

from accounts.models import Team
from memory.capture.jobs import job_run, jobs_sweep, lease_release
from memory.ops.health import heartbeat_stamp
from memory.ops.partitions import partitions_ahead
from memory.services.embeddings import embeddings_refresh
from memory.services.maintenance import nodes_expire_due, statistics_refresh


@shared_task(name="memory.capture.tasks.run_capture_job", ignore_result=True)
def run_capture_job(job_id: int) -> None:
    try:
        job_run(job_id)
    except Exception:
        lease_release(job_id)
        raise


@shared_task(name="memory.capture.tasks.sweep_jobs", ignore_result=True)
def sweep_jobs() -> dict:
    """Capture what is due; then, when semantic recall is on, embed what has no vector yet."""
    counts = jobs_sweep()
    if settings.MEMORY_EMBEDDER:
        with scopes_disabled():
            teams = list(Team.objects.all())
        for team in teams:
            embeddings_refresh(team=team)
    return counts


@shared_task(name="memory.capture.tasks.refresh_embeddings", ignore_result=True)
def refresh_embeddings(team_id: int) -> dict:
    with scopes_disabled():
        team = Team.objects.get(pk=team_id)
    return embeddings_refresh(team=team)


@shared_task(name="memory.capture.tasks.sweep_expired", ignore_result=True)
def sweep_expired() -> int:
    """Mark nodes past expires_at expired, team by team, each audited as system:expiry; then
    refresh SQLite's planner statistics (memory.services.maintenance.statistics_refresh)."""
    with scopes_disabled():
        teams = list(Team.objects.all())
    expired = sum(len(nodes_expire_due(team=team)) for team in teams)
    statistics_refresh()
    return expired


@shared_task(name="memory.capture.tasks.heartbeat", ignore_result=True)
def heartbeat() -> str:
    """Stamp the worker heartbeat that /healthz/full reads (memory.ops.health)."""
    return heartbeat_stamp().isoformat()


@shared_task(name="memory.capture.tasks.partitions_ahead", ignore_result=True)
def create_partitions_ahead() -> list[str]:
    """Create the coming months' retrieval partitions where the table is partitioned
    (memory.ops.partitions.partitions_ahead); a no-op elsewhere."""
    return partitions_ahead()
