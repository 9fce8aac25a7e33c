"""Stored-XSS probes for the administration pages (issue 6 quality bar): the payloads of
tests/dashboard/xss.py planted where an admin page shows them. Shared by the test-client test
(tests/dashboard/test_admin_xss.py) and the browser test (tests/browser/test_admin_browser.py).
"""

from django.contrib.auth import get_user_model
from django.db import transaction

from accounts.models import Membership, Role
from accounts.principal import system_principal
from accounts.services import agent_key_create
from memory.models import Category, KeySynonym, SchemaRule, ValueRule
from memory.services.audit import audit_record
from tests.dashboard.xss import ALL, ATTR, IMG, PAYLOADS, SCRIPT


def plant_admin(team) -> None:
    """Payloads in the team name, member usernames, an agent key's name and workspace limit,
    schema rules (domain, key, description, category prefix), synonyms, value rules (pattern,
    value JSON keys and values), categories (domain, path, description), and an audit event
    (actor, reason, workspace and user ids, payload keys and values)."""
    team.name = ALL
    team.save(update_fields=["name"])
    for number, payload in enumerate(PAYLOADS):
        # Usernames the dashboard's form would refuse, made elsewhere (createsuperuser, the admin site, SSO…).
        user = get_user_model().objects.create_user(username=f"{payload}{number}"[:150], password="x")
        Membership.objects.create(team=team, user=user, role=Role.VIEWER)
    agent_key_create(team=team, name=ALL, workspace_ids=[SCRIPT, ATTR])
    for payload in PAYLOADS:
        SchemaRule.objects.create(team=team, domain=payload[:64], type="fact", key=payload, description=ALL,
                                  category_prefix=[IMG, ATTR])
        KeySynonym.objects.create(team=team, domain=payload[:64], synonym=payload, key=SCRIPT)
        ValueRule.objects.create(team=team, domain=payload[:64], key=payload, pattern=payload,
                                 value_json={SCRIPT: IMG, "a": [ATTR]})
        Category.objects.create(team=team, domain=payload[:64], path=[payload, IMG], path_text=f"{payload}/{IMG}",
                                description=ALL)
    with transaction.atomic():
        audit_record(principal=system_principal(team, SCRIPT), event_type="memory.node.created", reason=ALL,
                     workspace_id=SCRIPT, user_id=ATTR,
                     payload={SCRIPT: ALL, "list": list(PAYLOADS), "nested": {IMG: ATTR}})
