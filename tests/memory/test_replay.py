from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from memory.models import Message, Node, NodeStatus, Retrieval


@pytest.fixture(autouse=True)
def _keep_the_test_connection_open():
    """The in-process WSGI application closes "obsolete" connections after each request, and
    inside a test transaction the test connection looks obsolete; Django's test client
    disconnects the same handlers."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


DEMO = Path(settings.BASE_DIR) / "demo" / "cooking_zh.json"
LOCOMO = Path(settings.SHARED_DATA_DIR) / "locomo" / "locomo5.json"


def test_the_cooking_demo_replays_through_the_api_and_supersedes(team):
    out = StringIO()
    call_command("replay", str(DEMO), team=team.slug, stdout=out)
    text = out.getvalue()
    assert Message.objects.filter(team=team).count() == 8
    old = Node.objects.get(team=team, key="avoid_ingredient")
    new = Node.objects.get(team=team, key="limit_ingredient")
    flavor = Node.objects.get(team=team, key="flavor_profile")
    assert old.status == NodeStatus.SUPERSEDED and new.supersedes_id == old.pk
    assert new.source_message_ids == [Message.objects.get(content="香菜现在可以接受一点，但不要太多。").pk]
    last = Retrieval.objects.filter(team=team, query="今晚吃什么？").order_by("-pk").first()
    assert set(last.used_node_ids) == {new.pk, flavor.pk}
    final_block = text.rsplit("context for '今晚吃什么？'", 1)[1]
    assert "少油少辣" in final_block and "香菜可以放一点" in final_block and "避免香菜" not in final_block


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo data is not present (set MEMORY_SHARED_DATA)")
def test_a_locomo_conversation_replays_with_sessions_dates_and_speakers(team):
    out = StringIO()
    call_command("replay", str(LOCOMO), team=team.slug, conversation="conv-26", max_turns=60, quiet=True, stdout=out)
    assert "replayed: 60 turns" in out.getvalue()
    messages = Message.objects.filter(team=team).select_related("session").order_by("pk")
    assert messages.count() == 60
    first = messages.first()
    assert first.session.user_id == "conv-26" and first.session.external_id == "conv-26-s1"
    assert first.metadata["speaker"] == "Caroline" and first.metadata["dia_id"] == "D1:1"
    assert first.occurred_at.year == 2023
    assert Retrieval.objects.filter(team=team).count() == messages.filter(role="assistant").count()


MADIAL = Path(settings.SHARED_DATA_DIR) / "madial_zh" / "dialogue-user1.jsonl"


@pytest.mark.skipif(not MADIAL.exists(), reason="the shared data folder is absent")
def test_a_madial_dialogue_replays_as_one_session_of_its_speaker(team):
    out = StringIO()
    call_command("replay", str(MADIAL), team=team.slug, conversation="2", workspace="w", quiet=True, stdout=out)
    messages = list(Message.objects.filter(team=team).select_related("session").order_by("pk"))
    assert "replayed: 8 turns" in out.getvalue() and len(messages) == 8
    assert (messages[0].session.user_id, messages[0].session.external_id) == ("bart", "madial-2")
    assert (messages[0].role, messages[0].content) == ("user", "我今天拿到了数学考试的满分！真的超级开心！")
    assert [message.role for message in messages[:2]] == ["user", "assistant"]


@pytest.mark.parametrize("text", ["{not json", '{"a": 1}\n{oops', "[1, 2]", '{"turns": 5}', "", '[{"x": 1}]'])
def test_a_file_in_no_known_format_is_a_clean_error(team, tmp_path, text):
    from django.core.management.base import CommandError

    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CommandError, match="JSON|conversation this command reads"):
        call_command("replay", str(path), team=team.slug, stdout=StringIO())
    assert not Message.objects.filter(team=team).exists()


def test_replay_refuses_an_unknown_team(db, tmp_path):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("replay", str(DEMO), team="nope", stdout=StringIO())


def test_replaying_the_demo_twice_leaves_one_active_value_per_key(team):
    call_command("replay", str(DEMO), team=team.slug, quiet=True, stdout=StringIO())
    call_command("replay", str(DEMO), team=team.slug, quiet=True, stdout=StringIO())
    for key in ("limit_ingredient", "flavor_profile"):
        assert Node.objects.filter(team=team, key=key, status=NodeStatus.ACTIVE).count() == 1


def test_the_kpis_show_the_replayed_demo(team):
    from datetime import UTC, datetime

    from memory.selectors.kpis import kpis

    call_command("replay", str(DEMO), team=team.slug, quiet=True, stdout=StringIO())
    today = datetime.now(UTC).date()
    totals = kpis(team=team, workspace_id="home", since=today, until=today)["totals"]
    calls = Retrieval.objects.filter(team=team).count()
    assert totals["context_calls"] == calls > 0
    # The demo's memories are the user's preferences, which L2 already injects (L5 leaves out
    # what the standing layers show), so its hit rate may well be 0.
    assert 0 <= totals["hit_rate"] <= 1
    assert totals["proposals"]["api"]["accepted"] > 0
    assert totals["latency_ms"]["rows"] == calls and totals["latency_ms"]["p95"] >= totals["latency_ms"]["p50"]
