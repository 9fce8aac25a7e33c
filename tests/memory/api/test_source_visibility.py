"""A node shows as its source_message_ids only the messages its reader may follow (R-TEN, R-STORE):
not those of a forgotten conversation, and for a key limited to workspaces, not those of
another workspace (a user's memory spans workspaces; a newcomer saw the other ids)."""

from accounts.services import agent_key_create
from memory.services.forget import session_forget
from memory.services.sessions import SessionRef
from tests.conftest import key_client
from tests.helpers import append, make_node


def test_source_ids_are_those_the_reader_may_follow(team, principal, agent_client):
    home, = append(principal, "I love green tea", session_id="s-home", user_id="dan", workspace_id="home")
    work, = append(principal, "I love green tea", session_id="s-work", user_id="dan", workspace_id="work")
    loose, = append(principal, "I love green tea", session_id="s-none", user_id="dan")
    old, = append(principal, "I love green tea", session_id="s-old", user_id="dan", workspace_id="home")
    node = make_node(principal, scope="user", user_id="dan", type="fact", title="likes green tea",
                     source_message_ids=[work.pk, home.pk, loose.pk, old.pk])
    session_forget(principal=principal, ref=SessionRef("s-old", "home", "dan"), mode="soft")
    home_only = key_client(agent_key_create(team=team, name="home only", workspace_ids=["home"])[1])
    context = {"workspace_id": "home", "user_id": "dan", "session_id": "s-new", "query": "green tea"}

    def shown(client, **extra):
        got = {
            "get": client.get(f"/api/v1/nodes/{node.pk}", extra).json()["source_message_ids"],
            "list": [item["source_message_ids"] for item in
                     client.get("/api/v1/nodes", {"user_id": "dan", **extra}).json()["results"]],
            "history": [item["source_message_ids"] for item in
                        client.get(f"/api/v1/nodes/{node.pk}/history", extra).json()["chain"]],
            "audit": [event["payload"]["source_message_ids"] for event in  # a second newcomer's find
                      client.get(f"/api/v1/nodes/{node.pk}/history", extra).json()["audit"]
                      if "source_message_ids" in event["payload"]],
            "search": [item["source_message_ids"] for item in
                       client.post("/api/v1/memory/search", {"workspace_id": "home", "user_id": "dan",
                                                                       "query_text": "green tea"},
                                   format="json").json()["relevant"]],
            "context": [item["source_message_ids"] for item in
                        client.post("/api/v1/context", context, format="json").json()["relevant_nodes"]],
        }
        return got

    everything = [work.pk, home.pk, loose.pk]  # the forgotten conversation's message never shows
    assert shown(agent_client) == {"get": everything, "list": [everything], "history": [everything],
                                   "audit": [everything], "search": [everything], "context": [everything]}
    mine = [home.pk, loose.pk]
    assert shown(home_only, workspace_id="home", user_id="dan") == {"get": mine, "list": [mine], "history": [mine],
                                                    "audit": [mine], "search": [mine], "context": [mine]}
