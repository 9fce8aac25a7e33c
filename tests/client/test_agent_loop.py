"""examples/agent_loop.py end to end: a subprocess drives two turns against the live server
with its local stand-in model, and the memory it stored shows in the dashboard (issue 8 part 3;
R-CTX, R-TOOLS)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from accounts.services import agent_key_create
from memory.models import Message, Node, Retrieval, RetrievalFeedback
from memory_client import MemoryClient

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agent_loop.py"


def run_example(live_server, raw_key: str, *turns: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    env.update(MEMORY_URL=live_server.url, MEMORY_API_KEY=raw_key, PYTHONPATH=str(ROOT / "clients" / "python"))
    return subprocess.run([sys.executable, str(EXAMPLE), "--session", "loop-1", *turns], env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_agent_loop_remembers_then_uses_the_memory_and_reports_it(live_server, team, viewer):
    _, raw = agent_key_create(team=team, name="loop agent")
    done = run_example(live_server, raw, "记住，我对花生过敏", "今晚吃什么？")
    assert done.returncode == 0, done.stderr
    said = Message.objects.get(session__external_id="loop-1", content="记住，我对花生过敏")
    # The agent's note, or capture's keyed allergy of the same turn when capture read it first (the
    # note that says it and nothing more is that memory): one memory either way.
    created = re.search(r"accepted: node (\d+) \((?:created|duplicate)\)", done.stdout)
    assert created, done.stdout
    assert Node.objects.filter(status="active", title="用户对花生过敏").count() == 1
    node = Node.objects.get(pk=int(created.group(1)))
    assert (node.title, node.source_message_ids) == ("用户对花生过敏", [said.pk])
    assert (node.scope, node.type, node.user_id, node.explicit, node.status) == ("user", "constraint", "xiaoming", True,
                                                                                "active")
    assert list(Message.objects.filter(session__external_id="loop-1").order_by("pk").values_list("role", flat=True)) == [
        "user", "assistant", "user", "assistant"]
    second = Retrieval.objects.filter(query="今晚吃什么？").get()
    assert node.pk in second.used_node_ids
    feedback = RetrievalFeedback.objects.get(retrieval=second)
    assert node.pk in feedback.used_node_ids and feedback.helpful is True
    answer = Message.objects.filter(session__external_id="loop-1", role="assistant").order_by("pk").last()
    assert f"[memory:{node.pk}]" in answer.content and "用户对花生过敏" in answer.content
    assert "[tool] memory_propose_update" in done.stdout
    with MemoryClient(live_server.url, raw) as memory:
        assert node.pk in [listed.id for listed in memory.list_nodes(user_id="xiaoming", scope="user").nodes]
    dashboard = Client()
    dashboard.force_login(viewer)
    page = dashboard.get(reverse("dashboard:memories"), {"user_id": "xiaoming"})
    assert page.status_code == 200 and "用户对花生过敏" in page.content.decode()


def test_a_turn_without_memories_says_so_and_reports_nothing_used(live_server, team):
    _, raw = agent_key_create(team=team, name="loop agent")
    done = run_example(live_server, raw, "What is the weather like?")
    assert done.returncode == 0, done.stderr
    assert "I have nothing stored about that yet." in done.stdout
    assert RetrievalFeedback.objects.get().used_node_ids == []


def test_without_a_key_the_example_explains_what_to_set(live_server):
    done = run_example(live_server, "")
    assert done.returncode == 2 and "set MEMORY_API_KEY" in done.stderr
