"""A team with real-looking data for the export and import tests, built through the real paths:
the demo conversation replayed through the API and captured, plus English turns, a supersede
chain, a soft- and a hard-forgotten node, summaries, a profile, policies, pinned instructions
and working memory."""

import hashlib
import io
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from accounts.principal import principal_for_key
from accounts.services import agent_key_create, team_create
from memory.capture.consolidate import consolidation_run
from memory.errors import InvalidInput
from memory.models import AuditEvent, Message, Node, Session
from memory.selectors.portability import ExportRequest
from memory.services.forgetting import ForgetSelector, memory_forget
from memory.services.instructions import instructions_set
from memory.services.lexicon import lexicon_set_save
from memory.services.nodes import NodeInput, node_supersede
from memory.services.policies import policy_set
from memory.services.portability.export import export_lines
from memory.services.portability.import_ import import_file
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append
from memory.services.working_memory import working_memory_put
from tests.helpers import append, make_node

DEMO_FILE = Path(settings.BASE_DIR) / "demo" / "cooking_zh.json"


def export_bytes(principal, kind: str = "team", **filters) -> bytes:
    return b"".join(export_lines(principal=principal, request=ExportRequest.of(kind=kind, **filters)))


def import_bytes(principal, data: bytes, **options):
    return import_file(principal=principal, stream=io.BytesIO(data), **options)


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def reseal(lines: list[bytes]) -> bytes:
    """The lines with a fresh end record, so only the change under test is wrong."""
    body = b"".join(lines[:-1])
    end = json.loads(lines[-1])
    end["sha256"] = hashlib.sha256(body).hexdigest()
    return body + (json.dumps(end) + "\n").encode()


def edit(data: bytes, record_type: str, change, where=lambda record: True) -> bytes:
    """`data` with `change` applied to the first record of `record_type` that `where` accepts, resealed."""
    lines = lines_of(data)
    for index, line in enumerate(lines):
        record = json.loads(line)
        if record.get("type") == record_type and where(record):
            change(record)
            lines[index] = (json.dumps(record, ensure_ascii=False) + "\n").encode()
            break
    return reseal(lines)


def stored(team) -> tuple[int, int, int, int]:
    return (Session.objects.filter(team=team).count(), Message.objects.filter(team=team).count(),
            Node.objects.filter(team=team).count(), AuditEvent.objects.filter(team=team).count())


def refused(target, data: bytes, match: str, error=InvalidInput):
    before = stored(target.team)
    with pytest.raises(error, match=match):
        import_bytes(target, data)
    assert stored(target.team) == before


@pytest.fixture
def filled(team, admin_principal):
    """The team `acme` filled with data; returns its admin principal."""
    # The replay goes through the in-process WSGI application, which closes "obsolete"
    # connections after each request; inside a test transaction the test's own looks obsolete
    # (tests/memory/test_replay.py does the same).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        call_command("replay", str(DEMO_FILE), team=team.slug, quiet=True, stdout=io.StringIO())
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    p = admin_principal
    english = append(p, "I am planning a trip to Kyoto next spring.", "Remember that I prefer window seats.",
                     session_id="travel-1", user_id="xiaoming", workspace_id="trips")
    append(p, "Sure, noted: window seats.", session_id="travel-1", user_id="xiaoming", workspace_id="trips",
           role="assistant")
    call_command("capture_run", stdout=io.StringIO())
    seat = make_node(p, user_id="xiaoming", domain="travel", key="seat", value_json="window", title="Prefers window seats",
                     content="The user prefers window seats on flights.", explicit=True,
                     source_message_ids=[english[1].pk])
    node_supersede(principal=p, old_node_id=seat.pk, reason="changed their mind",
                   data=NodeInput(scope="user", user_id="xiaoming", type="preference", domain="travel", key="seat",
                                  value_json="aisle", title="Prefers aisle seats",
                                  content="The user now prefers aisle seats on long flights.", explicit=True))
    make_node(p, scope="workspace", workspace_id="trips", type="decision", domain="travel", title="京都行程定在四月",
              content="The Kyoto trip is in April; 行程四月。")
    soft = make_node(p, scope="workspace", workspace_id="trips", type="fact", domain="travel",
                     title="Old hotel booking", content="Booked the Gion hotel (cancelled).")
    memory_forget(principal=p, selector=ForgetSelector(node_id=soft.pk), mode="soft", reason="cancelled")
    hard = make_node(p, scope="workspace", workspace_id="trips", type="fact", domain="travel",
                     title="Passport number 12345", content="secret passport number 12345")
    memory_forget(principal=p, selector=ForgetSelector(node_id=hard.pk), mode="hard", confirm=True,
                  reason="sensitive")
    make_node(p, scope="global", type="constraint", domain="company", title="Budget travel only",
              content="Company policy: economy class.")
    ref = SessionRef(session_id="travel-1", user_id="xiaoming", workspace_id="trips")
    append(p, "Also book a vegetarian meal on the flight.", session_id="travel-1", user_id="xiaoming",
           workspace_id="trips")
    summary_append(principal=p, data=SummaryInput(session=ref, summary="Planning Kyoto in spring; aisle seat, "
                                                                       "vegetarian meal."))
    working_memory_put(principal=p, ref=ref, data={"current_goal": "book flights", "slots": {"people": 2}})
    policy_set(principal=p, changes={"top_n": 5, "max_chars": 1500, "min_confidence": 0.3})
    policy_set(principal=p, workspace_id="trips", changes={"recent_messages": 4})
    instructions_set(principal=p, text="Answer in the user's language.")
    instructions_set(principal=p, workspace_id="trips", text="Prices in yen.")
    lexicon_set_save(principal=p, terms=["香菜", "芫荽", "cilantro"])
    lexicon_set_save(principal=p, terms=["inn", "hotel", "ryokan"], workspace_id="trips")
    consolidation_run(team=team, user_id="xiaoming", force=True)
    # Another user and workspace, for the isolation tests.
    append(p, "My name is Bob and I like green tea.", session_id="b-1", user_id="bob", workspace_id="office")
    make_node(p, user_id="bob", domain="drinks", title="Likes green tea", content="Bob likes green tea.")
    make_node(p, scope="workspace", workspace_id="office", type="fact", domain="office", title="Office opens at 9")
    return p


@pytest.fixture
def target(db):
    """An empty second team and its admin key's principal."""
    other = team_create(slug="copy", name="Copy")
    return principal_for_key(agent_key_create(team=other, name="admin", kind="admin")[0])
