"""Keeping the stored vectors of the optional semantic recall up to date (issue 7; R-QUERY).

Vectors are derived data, like the keyword index: `embeddings_refresh` embeds a team's active
nodes that have no vector for the configured model (or an older one than the node) and its
messages of live conversations that have none. It runs after writes (scheduled on commit by
node and message services), in the capture sweep, and from `manage.py embed`. Each batch
it stores is one audit event (`memory.embeddings.refreshed`, actor system:embeddings).
With semantic recall off, all of this does nothing.
"""

import logging
import threading

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django_scopes import scope

from accounts.models import Team
from accounts.principal import system_principal
from memory.embedding_models import Embedding
from memory.models import Message, Node, NodeStatus
from memory.search.semantic import Embedder, embedder, to_bytes
from memory.services.audit import audit_record

logger = logging.getLogger(__name__)
BATCH = 64  # texts per call of the model
PASSAGE_CHARS = 1000
_RUNNING: dict[int, bool] = {}  # team id → another refresh was asked for while one runs (this process)
_RUNNING_LOCK = threading.Lock()


def node_text(node) -> str:
    """What a node's vector stands for: its title and content (the content alone when it
    already says the title)."""
    title, content = node.title.strip(), node.content.strip()
    if not content or title in content:
        return content or title
    return f"{title}. {content}" if title else content


def passage_text(text: str) -> str:
    """A long text is embedded by its head and tail (PASSAGE_CHARS in all): the model's cost
    grows with the length, and a vector cannot say more than a few hundred words anyway."""
    text = " ".join(text.split())
    if len(text) <= PASSAGE_CHARS:
        return text
    half = PASSAGE_CHARS // 2
    return text[:half] + " … " + text[-half:]


def embeddings_drop(node) -> None:
    """Delete the vectors of a node whose text changed (in the caller's transaction)."""
    Embedding.objects.filter(team_id=node.team_id, node=node).delete()


def _store(team: Team, model: Embedder, kind: str, rows: list) -> int:
    texts = [passage_text(node_text(row) if kind == "node" else row.content) for row in rows]
    vectors = model.passages(texts)
    with transaction.atomic():
        if kind == "node":
            Embedding.objects.filter(team=team, model=model.name, node__in=rows).delete()
        # A concurrent refresh may have stored some of these meanwhile: keep theirs, store the rest.
        Embedding.objects.bulk_create([
            Embedding(team=team, model=model.name, dim=model.dim, vector=to_bytes(vector),
                      node=row if kind == "node" else None, message=row if kind == "message" else None,
                      source_updated_at=row.updated_at if kind == "node" else None)
            for row, vector in zip(rows, vectors, strict=True)
        ], ignore_conflicts=True)
        audit_record(principal=system_principal(team, "embeddings"), event_type="memory.embeddings.refreshed",
                     payload={"model": model.name, f"{kind}_ids": [row.pk for row in rows]})
    return len(rows)


def embeddings_refresh(*, team: Team, limit: int = 5000) -> dict[str, int]:
    """Embed up to `limit` nodes and `limit` messages of `team` that lack a current vector.
    Returns {"nodes": n, "messages": m} stored; zeros when semantic recall is off."""
    model = embedder()
    done = {"nodes": 0, "messages": 0}
    if model is None:
        return done
    with scope(team=team):
        current = Embedding.objects.filter(team=team, model=model.name)
        nodes = (Node.objects.filter(team=team, status=NodeStatus.ACTIVE)
                 .exclude(pk__in=current.filter(node__isnull=False, source_updated_at=F("node__updated_at"))
                          .values("node_id"))
                 .order_by("pk")[:limit])
        messages = (Message.objects.filter(team=team, session__deleted_at__isnull=True)
                    .exclude(pk__in=current.filter(message__isnull=False).values("message_id"))
                    .order_by("pk")[:limit])
        for kind, queryset in (("nodes", nodes), ("messages", messages)):
            rows = list(queryset)
            for start in range(0, len(rows), BATCH):
                done[kind] += _store(team, model, kind[:-1], rows[start : start + BATCH])
    return done


def embeddings_schedule(team_id: int) -> None:
    """After the current transaction commits, refresh the team's vectors in the background
    (a Celery task; without a broker, a thread). Does nothing when semantic recall is off."""
    if not getattr(settings, "MEMORY_EMBEDDER", ""):
        return
    transaction.on_commit(lambda: _enqueue(team_id), robust=True)


def _enqueue(team_id: int) -> None:
    from config.celery import app
    from memory.capture.tasks import refresh_embeddings

    if app.conf.task_always_eager and settings.MEMORY_CAPTURE_THREADS:
        with _RUNNING_LOCK:
            if team_id in _RUNNING:
                _RUNNING[team_id] = True
                return
        threading.Thread(target=_run_detached, args=(team_id,), daemon=True, name=f"embed-{team_id}").start()
        return
    try:
        refresh_embeddings.delay(team_id)
    except Exception:  # noqa: BLE001 - an unreachable broker must never fail the agent's call; the sweep catches up
        logger.warning("could not queue the embedding refresh of team %s", team_id)


def _run_detached(team_id: int) -> None:
    """One refresh thread per team at a time: a write while it runs asks it for one more pass
    instead of starting a thread of its own (a burst of appends is embedded once)."""
    from django.db import connections

    with _RUNNING_LOCK:
        if team_id in _RUNNING:
            _RUNNING[team_id] = True
            return
        _RUNNING[team_id] = False
    try:
        while True:
            embeddings_refresh(team=Team.objects.get(pk=team_id))
            with _RUNNING_LOCK:
                if not _RUNNING[team_id]:
                    del _RUNNING[team_id]
                    return
                _RUNNING[team_id] = False
    except Exception:  # noqa: BLE001 - logged; the sweep retries
        logger.exception("embedding refresh of team %s failed on its thread", team_id)
        with _RUNNING_LOCK:
            _RUNNING.pop(team_id, None)
    finally:
        connections.close_all()
