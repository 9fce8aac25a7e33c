"""Isolation probes (issue 9 part 2; R-TEN): every URL pattern of the site (API and dashboard)
× every method it answers × every kind of principal, each with the status this table expects.

Principals: anonymous; a viewer, an editor and an admin of team A (logins); an admin of team
B, as a login and as an admin key; a revoked key of team A; a key of team A limited to another
workspace. Team A's data carries a canary string (and its workspace's data a second one); a
principal outside team A never gets either back, nor the workspace canary through a key
limited to another workspace. A URL pattern without an entry here fails the test, and so does
a method a pattern answers that the table does not probe (it must be a 405), so a new
endpoint or method cannot ship without its probes. tests/memory/api/test_isolation.py keeps
the deeper checks of single endpoints (listings, workspace limits, CSRF).
"""

import json

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from accounts.models import KeyKind
from accounts.principal import principal_for_key
from accounts.services import agent_key_create, agent_key_revoke
from memory.models import Session
from tests.conftest import key_client
from tests.fuzz.world import fingerprint, plant
from tests.helpers import make_node
from tests.probe_table import PROBES, Probe

TEAM_CANARY = "TEAMCANARY-5c1e"  # in every row of team A
WS_CANARY = "WSCANARY-9d2b"  # in the rows of team A's workspace w-alpha
CTX = {"workspace_id": "w-alpha", "user_id": "u-alpha", "session_id": "s-alpha"}
PRINCIPALS = ("anonymous", "viewer", "editor", "admin", "outsider", "outsider_key", "revoked", "other_ws")
# Who may not see which canary: a principal outside the team sees neither; the key limited to
# another workspace reads the team's user and global memory, never w-alpha's.
FORBIDDEN = {"anonymous": TEAM_CANARY, "outsider": TEAM_CANARY, "outsider_key": TEAM_CANARY,
             "revoked": TEAM_CANARY, "other_ws": WS_CANARY}
METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture
def world(team, admin, editor, viewer, outsider, other_team):
    """Team A (`acme`) with canary-marked data of every kind, plus objects each destructive probe
    may consume; returns the ids the probe URLs name."""
    key, raw = agent_key_create(team=team, name="owner", kind=KeyKind.ADMIN)
    owner = principal_for_key(key)
    ids = plant(owner, CTX, TEAM_CANARY, WS_CANARY)
    doomed = {"workspace_id": "w-alpha", "user_id": "u-alpha", "session_id": "s-doomed"}
    plant(owner, doomed, TEAM_CANARY, WS_CANARY)
    dash = {"workspace_id": "w-alpha", "user_id": "u-alpha", "session_id": "s-dash"}
    plant(owner, dash, TEAM_CANARY, WS_CANARY)
    for name in ("node_del", "node_forget", "node_propose", "node_dash"):
        ids[name] = make_node(owner, scope="workspace", workspace_id="w-alpha", type="fact", key=name,
                              title=f"{name} {TEAM_CANARY} {WS_CANARY}").pk
    context = key_client(raw).post("/api/v1/context", {**CTX, "query": "note"}, format="json")
    ids["retrieval"] = context.json()["retrieval_id"]
    ids["session_pk"] = Session.objects.get(team=team, external_id="s-alpha").pk
    ids["session_dash_pk"] = Session.objects.get(team=team, external_id="s-dash").pk
    revoked_key, revoked_raw = agent_key_create(team=team, name="revoked", kind=KeyKind.ADMIN)
    agent_key_revoke(key=revoked_key)
    return {
        "ids": ids, "team": team, "raw": {
            "revoked": revoked_raw,
            "other_ws": agent_key_create(team=team, name="w-other only", workspace_ids=["w-other"])[1],
            "outsider_key": agent_key_create(team=other_team, name="globex admin", kind=KeyKind.ADMIN)[1],
        },
        "logins": {"viewer": viewer, "editor": editor, "admin": admin, "outsider": outsider},
    }


def client_for(world, principal: str) -> Client:
    if principal in world["logins"]:
        client = APIClient()
        client.force_login(world["logins"][principal])
        return client
    if principal in world["raw"]:
        return key_client(world["raw"][principal])
    return APIClient()


def send(client: Client, probe: Probe, ids: dict, method: str | None = None):
    method = method or probe.method
    url = probe.url.format(**ids)
    if probe.form and method == "post":
        return client.post(url, {key: str(value).format(**ids) for key, value in probe.body.items()})
    if method in ("get", "delete"):
        return getattr(client, method)(url)
    body = probe.body if isinstance(probe.body, str) else json.dumps(_fill(probe.body or {}, ids))
    return getattr(client, method)(url, data=body, content_type="application/json")


def _fill(value, ids):
    """The body with `{name}` strings replaced by the world's ids (ints stay ints)."""
    if isinstance(value, dict):
        return {key: _fill(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, ids) for item in value]
    if isinstance(value, str) and value.startswith("{") and value.endswith("}") and value[1:-1] in ids:
        return ids[value[1:-1]]
    return value


def url_patterns(patterns=None, namespace: str = ""):
    """(name or route, pattern) of every URL pattern of the site, includes walked."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from url_patterns(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern):
            yield (f"{namespace}{pattern.name}" if pattern.name else str(pattern.pattern)), pattern


def test_every_url_pattern_of_the_site_has_probes():
    names = {name for name, _pattern in url_patterns()}
    pairs = {(probe.pattern, probe.method) for probe in PROBES}
    print(f"\nprobe table: {len(names)} URL patterns, {len(pairs)} pattern × method pairs, {len(PRINCIPALS)} principals "
          f"= {len(PROBES) * len(PRINCIPALS)} probes")
    assert names - {probe.pattern for probe in PROBES} == set(), "add probes for these URL patterns"
    assert {probe.pattern for probe in PROBES} - names == set(), "probes for URL patterns that no longer exist"


def test_every_probe_names_every_principal():
    for probe in PROBES:
        assert set(probe.expect) == set(PRINCIPALS), (probe.pattern, probe.method)


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_each_principal_gets_the_expected_status_everywhere_and_no_data_it_may_not_see(world, principal):
    client = client_for(world, principal)
    ids = world["ids"]
    before = fingerprint(world["team"])
    wrong, leaks, seen = [], [], 0
    for probe in PROBES:
        response = send(client, probe, ids)
        text = _text(response)  # once: a streamed export is consumed by reading it
        expected = probe.expect[principal]
        allowed = expected if isinstance(expected, tuple) else (expected,)
        if response.status_code not in allowed:
            wrong.append((probe.pattern, probe.method, probe.url, response.status_code, expected, text[:200]))
        seen += WS_CANARY in text
        marker = FORBIDDEN.get(principal)
        if marker and marker in text:
            leaks.append((probe.pattern, probe.method, probe.url, text[:300]))
    print(f"\nprobes as {principal}: {len(PROBES)} requests, {len(wrong)} unexpected statuses, {len(leaks)} leaks")
    assert wrong == [], "\n".join([f"{len(wrong)} of {len(PROBES)} probes answered otherwise than the table says "
                                    "(pattern, method, url, got, expected, body):", *map(repr, wrong)])
    assert leaks == [], "\n".join(map(repr, leaks))
    if principal not in FORBIDDEN:  # the probes reach team A's data: its members see the canaries
        assert seen >= 15, seen
    if principal in FORBIDDEN and principal != "other_ws":  # nothing outside team A changed team A's rows
        assert fingerprint(world["team"]) == before


def _text(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def test_a_method_the_table_does_not_probe_is_refused_with_405(world):
    """So an endpoint that learns a new method needs its probes first. As team A's admin, whose
    requests reach the view rather than stopping at authentication."""
    client = client_for(world, "admin")
    probed = {(probe.pattern, probe.method) for probe in PROBES}
    patterns = {probe.pattern: probe for probe in PROBES}
    unexpected, checked = [], 0
    for name, probe in patterns.items():
        if name in ("login", "logout"):  # Django's: a login redirects any method; logout ends the session
            continue
        for method in METHODS:
            if (name, method) in probed:
                continue
            status = send(client, probe, world["ids"], method=method).status_code
            checked += 1
            if status not in (405, 404 if name in ("api-unknown", "^api(/v1)?$") else 405):
                unexpected.append((name, method, status))
    print(f"\nunprobed methods tried: {checked}, not refused: {len(unexpected)}")
    assert unexpected == [], "\n".join(map(repr, unexpected))
