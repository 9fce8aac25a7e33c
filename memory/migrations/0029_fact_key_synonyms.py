"""Give existing teams the key synonyms of the facts capture writes (home_city → home, employer →
workplace, job_title → occupation, allergies → allergy; memory.schema_defaults.FACT_SYNONYMS), which new
teams get when they are created.

A team keeps what it has: a synonym is not added where the team already has that synonym in any
domain (a lookup without a domain follows a synonym only where every domain agrees), where it would
chain (its synonym is another's key, or its key another's synonym), where it would rename a key
the team's schema controls, or where the team stores memories under that name in any domain.
"""

from django.db import migrations
from django.db.models import Q


def add_fact_synonyms(apps, schema_editor) -> None:
    from memory.schema_defaults import FACT_SYNONYMS

    Team = apps.get_model("accounts", "Team")
    KeySynonym = apps.get_model("memory", "KeySynonym")
    SchemaRule = apps.get_model("memory", "SchemaRule")
    Node = apps.get_model("memory", "Node")
    for team in Team.objects.all():
        synonyms = KeySynonym.objects.filter(team=team)
        for domain, synonym, key in FACT_SYNONYMS:
            near = synonyms.filter(domain__in=[domain, ""]) if domain else synonyms
            rules = SchemaRule.objects.filter(team=team, key=synonym)
            if domain:
                rules = rules.filter(domain=domain)
            if (synonyms.filter(synonym=synonym).exists()
                    or near.filter(Q(key=synonym) | Q(synonym=key)).exists()
                    or rules.exists() or Node.objects.filter(team=team, key=synonym).exists()):
                continue
            KeySynonym.objects.create(team=team, domain=domain, synonym=synonym, key=key)


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0002_team_min_confidence"),
        ("memory", "0028_message_agent_key"),
    ]

    operations = [
        migrations.RunPython(add_fact_synonyms, migrations.RunPython.noop),
    ]
