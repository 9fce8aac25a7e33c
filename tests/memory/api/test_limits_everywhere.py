"""One limit, every write path (docs/limits.md): a node's fields whether it comes through
propose (create or supersede), an extraction batch or the dashboard's correct; a message's
content alone or in a batch; a budget policy through the API or the dashboard. At the limit
the write is stored, one past it is a 400 and nothing is stored. (Import: tests/memory/
portability/test_limits_on_import.py.)"""

import pytest
from django.urls import reverse

from memory import limits
from memory.models import Message, Node
from memory.policy_models import BudgetPolicy
from tests.dashboard.conftest import logged_in
from tests.helpers import make_node

CONTEXT = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}
SESSION_NODE = {"scope": "session", "type": "constraint", "title": "one"}
OVER = {
    "content": "长" * (limits.NODE_CONTENT_MAX + 1),
    "title": "题" * (limits.NODE_TITLE_MAX + 1),
    "tags": [f"t{n}" for n in range(limits.NODE_LIST_ITEMS_MAX + 1)],
}
AT = {
    "content": "长" * limits.NODE_CONTENT_MAX,
    "title": "题" * limits.NODE_TITLE_MAX,
    "tags": [f"t{n}" for n in range(limits.NODE_LIST_ITEMS_MAX)],
}


def _propose(client, node):
    return client.post(reverse("api-memory-propose"), {**CONTEXT, "operation": "create", "node": node}, format="json")


def _supersede(client, target, node):
    return client.post(reverse("api-memory-propose"), {**CONTEXT, "operation": "supersede", "target_id": target.pk,
                                                       "node": node}, format="json")


def _extraction(client, node):
    return client.post(reverse("api-memory-extractions"),
                       {**CONTEXT, "operations": [{"operation": "create", "node": node}]}, format="json")


def _correct(editor, target, field, value):
    data = {"action": "correct", "correct-title": target.title, "correct-content": target.content,
            "correct-value_json": "", "correct-tags": "", "correct-reason": "limits"}
    data[f"correct-{field}"] = ", ".join(value) if isinstance(value, list) else value
    return logged_in(editor).post(reverse("dashboard:node", args=[target.pk]), data)


@pytest.fixture
def target(principal):
    return make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="old", content="old")


@pytest.mark.parametrize("field", sorted(OVER))
def test_a_node_field_one_past_its_limit_is_refused_on_every_path(agent_client, editor, target, field):
    before = Node.objects.count()
    node = {**SESSION_NODE, field: OVER[field]}
    answers = {
        "propose": _propose(agent_client, node),
        "supersede": _supersede(agent_client, target, {field: OVER[field]}),
        "extraction": _extraction(agent_client, node),
        "dashboard correct": _correct(editor, target, field, OVER[field]),
    }
    assert {path: answer.status_code for path, answer in answers.items()} == dict.fromkeys(answers, 400)
    for path in ("propose", "supersede", "extraction"):
        assert field in str(answers[path].json()["error"]), path
    assert Node.objects.count() == before
    target.refresh_from_db()
    assert target.status == "active" and target.content == "old"


@pytest.mark.parametrize("field", sorted(AT))
def test_a_node_field_at_its_limit_is_stored_on_every_path(agent_client, editor, principal, field):
    answers = {
        "propose": _propose(agent_client, {**SESSION_NODE, "key": "a", field: AT[field]}),
        "extraction": _extraction(agent_client, {**SESSION_NODE, "key": "b", field: AT[field]}),
    }
    assert {path: answer.status_code for path, answer in answers.items()} == dict.fromkeys(answers, 201)
    first = make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="x", content="x", key="c")
    second = make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="y", content="y", key="d")
    assert _supersede(agent_client, first, {field: AT[field]}).json()["accepted"] is True
    assert _correct(editor, second, field, AT[field]).status_code == 302
    stored = Node.objects.filter(status="active").exclude(pk__in=[first.pk, second.pk])
    assert sorted(len(getattr(node, field)) for node in stored) == [len(AT[field])] * 4


def test_message_content_has_one_limit_alone_and_in_a_batch(agent_client):
    url = reverse("api-messages")
    one = {"session_id": "s1", "role": "user"}
    over, at = "m" * (limits.MESSAGE_CONTENT_MAX + 1), "m" * limits.MESSAGE_CONTENT_MAX
    assert agent_client.post(url, {**one, "content": over}, format="json").status_code == 400
    batch = {"messages": [{**one, "content": "ok"}, {**one, "content": over}]}
    assert agent_client.post(url, batch, format="json").status_code == 400
    assert Message.objects.count() == 0
    assert agent_client.post(url, {**one, "content": at}, format="json").status_code == 201
    assert agent_client.post(url, {"messages": [{**one, "content": at}] * 2}, format="json").status_code == 201
    assert Message.objects.count() == 3


def test_a_batch_one_past_its_size_is_refused(agent_client):
    items = [{"session_id": "s1", "role": "user", "content": "x"}] * (limits.MESSAGE_BATCH_MAX + 1)
    response = agent_client.post(reverse("api-messages"), {"messages": items}, format="json")
    assert response.status_code == 400
    assert Message.objects.count() == 0
    operations = [{"operation": "create", "node": {**SESSION_NODE, "key": f"k{n}"}}
                  for n in range(limits.EXTRACTION_OPERATIONS_MAX + 1)]
    response = agent_client.post(reverse("api-memory-extractions"), {**CONTEXT, "operations": operations},
                                 format="json")
    assert response.status_code == 400
    assert Node.objects.count() == 0


def test_a_budget_policy_has_one_range_through_the_api_and_the_dashboard(team, admin, admin_principal):
    from accounts.services import agent_key_create
    from dashboard.budget_forms import POLICY_FIELDS
    from tests.conftest import key_client

    api = key_client(agent_key_create(team=team, name="admin api", kind="admin")[1])
    page = logged_in(admin)
    top = limits.CONTEXT_TOP_N_MAX

    def dashboard(value):
        data = {name: "" for name in POLICY_FIELDS} | {"top_n": str(value), "action": "save", "workspace_id": ""}
        return page.post(reverse("dashboard:budgets"), data)

    assert api.put(reverse("api-policies"), {"top_n": top + 1}, format="json").status_code == 400
    assert dashboard(top + 1).status_code == 400
    assert not BudgetPolicy.objects.exists()
    assert api.put(reverse("api-policies"), {"top_n": top}, format="json").status_code == 200
    assert BudgetPolicy.objects.get().top_n == top
    assert dashboard(top - 1).status_code == 302
    assert BudgetPolicy.objects.get().top_n == top - 1


def test_page_and_result_sizes_are_capped_the_same_way(agent_client):
    nodes = agent_client.get(reverse("api-nodes"), {"limit": limits.PAGE_SIZE_MAX + 1})
    assert nodes.status_code == 400
    assert agent_client.get(reverse("api-nodes"), {"limit": limits.PAGE_SIZE_MAX}).status_code == 200
    recent = agent_client.get(reverse("api-messages"), {"session_id": "s1", "limit": limits.RECENT_MESSAGES_MAX + 1})
    assert recent.status_code == 400
    search = agent_client.post(reverse("api-memory-search"), {"query_text": "x", "limit": limits.QUERY_LIMIT_MAX + 1},
                               format="json")
    assert search.status_code == 400
