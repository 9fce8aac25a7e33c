"""The scale bench's COPY loader (benchmarks/scale_load.py) writes rows the product can search:
a few hundred rows loaded the bench's way are found through the API, so a loader that
produced an unsearchable index would fail here rather than quietly measure nothing."""

import sys
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse

from memory.models import Message, Node, NodeStatus, Scope
from memory.search.text import owner_token

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import corpus  # noqa: E402 - benchmarks/ is not a package
import scale_load  # noqa: E402

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the scale loader writes with PostgreSQL COPY"),
    pytest.mark.skipif(not corpus.LOCOMO.exists(), reason="the shared conversations are not on this machine"),
]


@pytest.fixture
def loaded(team):
    team_load = scale_load.TeamLoad(team, scale_load.Shape(users=3, workspaces=2, sessions=5),
                                    corpus.load_real_text(), scale_load.Ids())
    scale_load.load([(team_load, 300, 200, 200)], log=lambda text: None)
    return team_load


def test_every_loaded_row_is_in_the_keyword_index_under_its_team(loaded, team):
    with connection.cursor() as cursor:
        for table in ("memory_node", "memory_message"):
            cursor.execute(f"SELECT COUNT(*) FROM {table} WHERE team_id = %s AND search_vector @@ "
                           "to_tsquery('simple', %s)", [team.pk, owner_token(team.pk, "t")])
            assert cursor.fetchone()[0] == {"memory_node": 300, "memory_message": 200}[table]
    assert Node.objects.filter(team=team).count() == 300
    assert Message.objects.filter(team=team).count() == 200


def test_a_loaded_node_is_found_by_its_title_through_the_search_api(loaded, team, agent_client):
    node = (Node.objects.filter(team=team, scope=Scope.USER, status=NodeStatus.ACTIVE, expires_at=None)
            .order_by("-pk").first())
    response = agent_client.post(reverse("api-memory-search"),
                                 {"user_id": node.user_id, "query_text": node.title, "limit": 50}, format="json")
    assert response.status_code == 200
    assert node.pk in [item["id"] for item in response.json()["relevant"]]

