"""Operational state that is not team data (R-OPS): the worker heartbeat."""

from django.db import models


class Heartbeat(models.Model):
    """The last time a component proved it was alive. Beat queues `memory.capture.tasks.heartbeat`
    every MEMORY_HEARTBEAT_EVERY seconds and whichever worker runs it stamps the `worker` row, so
    its age covers beat, broker and a worker together (memory.ops.health). No team: the row
    holds no tenant data, only a name and a time."""

    name = models.CharField(max_length=32, unique=True)
    beat_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.beat_at:%Y-%m-%d %H:%M:%S}"
