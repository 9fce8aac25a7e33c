"""No page or answer is kept by the browser (dashboard.middleware.NeverCacheMiddleware): Back
after a forget or a correction showed the memory as it was."""

from django.urls import reverse

from tests.dashboard.conftest import make_node


def test_pages_and_answers_are_never_cached(viewer_client, principal, agent_client):
    node = make_node(principal, title="Staging server is staging-2")
    for url in (reverse("dashboard:memories"), reverse("dashboard:node", args=[node.pk])):
        response = viewer_client.get(url)
        assert response.status_code == 200
        assert {"no-store", "no-cache", "must-revalidate", "private"} <= set(
            part.strip() for part in response["Cache-Control"].split(","))
    api = agent_client.get("/api/v1/nodes")
    assert "no-store" in api["Cache-Control"]


def test_htmx_keeps_no_history_snapshot(viewer_client):
    html = viewer_client.get(reverse("dashboard:memories")).content.decode()
    assert '"historyCacheSize": 0, "refreshOnHistoryMiss": true' in html
