"""Recompute the keyword index text of a team's nodes (search_tokens), for when what goes into
it changed after they were written: concepts turned on (MEMORY_CONCEPTS) after nodes were
written without them, or a thesaurus of another version. Used by `manage.py reindex_nodes`.

search_tokens is derived data, like the vectors of semantic recall: each batch that changes
rows is one transaction with one audit event (`memory.nodes.reindexed`, actor
system:reindex, payload {"count", "first_id", "last_id"}). Nodes whose text would not change
are not written.
"""

from django.db import transaction
from django_scopes import scope

from accounts.models import Team
from accounts.principal import system_principal
from memory.models import Node
from memory.services.audit import audit_record
from memory.services.node_input import node_search_tokens

BATCH = 200  # nodes locked at a time


def nodes_reindex(*, team: Team, batch: int = BATCH) -> dict[str, int]:
    """Recompute every node of `team` (any status): {"nodes": read, "changed": written}.

    Each batch is read under row locks (select_for_update) and written in the same
    transaction, so an edit made meanwhile waits for the batch and then writes its own tokens,
    instead of being overwritten with tokens of the text it replaced (a newcomer's finding)."""
    done = {"nodes": 0, "changed": 0}
    after = 0
    with scope(team=team):
        while True:
            with transaction.atomic():
                rows = list(Node.objects.select_for_update().filter(team=team, pk__gt=after).order_by("pk")[:batch])
                if not rows:
                    return done
                after = rows[-1].pk
                done["nodes"] += len(rows)
                changed = []
                for node in rows:
                    tokens = node_search_tokens(node)
                    if tokens != node.search_tokens:
                        node.search_tokens = tokens
                        changed.append(node)
                if changed:
                    Node.objects.bulk_update(changed, ["search_tokens"])
                    audit_record(principal=system_principal(team, "reindex"), event_type="memory.nodes.reindexed",
                                 payload={"count": len(changed), "first_id": changed[0].pk, "last_id": changed[-1].pk})
                    done["changed"] += len(changed)
