"""Respell the keys of stored favorites as a write spells them now (memory.services.schema:
the team's synonym of the key as sent, else memory.key_spelling's spelling and that spelling's
synonym: fav_colour → favorite_color, a cooking fav_cuisine → preferred_cuisine), so that a new
value of a favorite stored earlier as fav_colour supersedes it instead of standing beside it.

A key a schema rule of its domain controls, or one the team's own synonym maps, stays as it is.
A supersede chain is renamed whole, each version with an audit event `memory.node.updated`
naming the key before and after, or not at all: not where its active version's owner already
holds an active node under the new key in the same slot (the two are kept; an editor resolves
them). Search tokens are not rebuilt: they still hold the old key's words until the node is next
written (or `manage.py reindex_nodes`).
"""

from django.db import migrations


def respell(apps, schema_editor) -> None:
    from memory.key_spelling import key_spelling

    Node = apps.get_model("memory", "Node")
    AuditEvent = apps.get_model("memory", "AuditEvent")
    SchemaRule = apps.get_model("memory", "SchemaRule")
    KeySynonym = apps.get_model("memory", "KeySynonym")
    nodes = {node.pk: node for node in Node.objects.filter(key__istartswith="fav").select_related("session")}
    if not nodes:
        return
    team_ids = {node.team_id for node in nodes.values()}
    rules = set(SchemaRule.objects.filter(team_id__in=team_ids).values_list("team_id", "domain", "key"))
    synonyms = {(team, domain, synonym): key for team, domain, synonym, key in
                KeySynonym.objects.filter(team_id__in=team_ids).values_list("team_id", "domain", "synonym", "key")}

    def synonym(node, key: str) -> str | None:
        return synonyms.get((node.team_id, node.domain, key)) or synonyms.get((node.team_id, "", key))

    def written(node) -> str:
        """The key a write of node.key in node.domain takes now."""
        if (node.team_id, node.domain, node.key) in rules or synonym(node, node.key):
            return node.key
        spelled = key_spelling(node.key)
        if spelled == node.key or (node.team_id, node.domain, spelled) in rules:
            return spelled
        return synonym(node, spelled) or spelled

    newer = {node.supersedes_id: node.pk for node in nodes.values() if node.supersedes_id in nodes}
    chains: dict[int, list] = {}  # the newest version among the candidates → its chain
    for node in nodes.values():
        head = node.pk
        while head in newer:
            head = newer[head]
        chains.setdefault(head, []).append(node)
    for chain in chains.values():
        renames = [(node, written(node)) for node in sorted(chain, key=lambda node: node.pk)]
        if any(node.status == "active" and key != node.key and Node.objects.filter(
                team_id=node.team_id, session_id=node.session_id, scope=node.scope, workspace_id=node.workspace_id,
                user_id=node.user_id, domain=node.domain, type=node.type, key=key, slot=node.slot,
                status="active").exists() for node, key in renames):
            continue
        for node, key in renames:
            if key == node.key:
                continue
            Node.objects.filter(pk=node.pk).update(key=key)
            AuditEvent.objects.create(
                team_id=node.team_id, event_type="memory.node.updated", node_id=node.pk,
                session_id=node.session.external_id if node.session is not None else "",
                workspace_id=node.workspace_id, user_id=node.user_id, actor="migration 0030",
                reason="one spelling of a favorite's key (memory.key_spelling)",
                payload={"before": {"key": node.key}, "after": {"key": key}, "version": node.version})


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0029_fact_key_synonyms"),
    ]

    operations = [
        migrations.RunPython(respell, migrations.RunPython.noop),
    ]
