"""What a review of the context call under tight budgets found (R-CTX): pinned instructions lost
to lower layers, and a long conversation summary was never injected."""

import pytest

from accounts.services import agent_key_create
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append
from tests.conftest import key_client
from tests.helpers import append, make_node

CTX = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}
RULE = "Never recommend recipes with peanuts: the user's child is allergic to them."


@pytest.fixture
def admin_client(team):
    return key_client(agent_key_create(team=team, name="admin", kind="admin")[1])


def context(client, query="dinner ideas", **budget):
    body = {**CTX, "query": query, **({"budget": budget} if budget else {})}
    response = client.post("/api/v1/context", body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_pinned_instructions_go_in_before_lower_layers_fill_a_tight_block(principal, admin_client, agent_client):
    """A review's find: under max_chars 300 a 75-character instruction (its L0 share was 75) was
    left out while workspace, session and relevant memories filled 297 characters."""
    assert admin_client.put("/api/v1/instructions", {"text": RULE}, format="json").status_code == 200
    for index in range(4):
        make_node(principal, scope="workspace", workspace_id="w1", type="fact",
                  title=f"dinner guests bring dessert number {index} to the party")
        make_node(principal, scope="session", workspace_id="w1", user_id="u1", session_id="s1", type="fact",
                  title=f"dinner ideas for tonight, option {index}, something with noodles")
    body = context(agent_client, max_chars=300)
    assert body["block"].startswith(f"[Instructions]\n{RULE}") and len(body["block"]) <= 300
    assert not any("pinned instructions" in warning for warning in body["diagnostics"]["warnings"])
    tiny = context(agent_client, max_chars=60)  # smaller than the instruction: left out, and said so
    assert RULE not in tiny["block"]
    assert any("pinned instructions of the team" in warning for warning in tiny["diagnostics"]["warnings"])


def test_a_summary_longer_than_the_room_left_is_cut_to_it_not_left_out(principal, agent_client):
    """A review's find: a rule summary of 1,499 characters never fitted the default 1,200 and was
    left out of every call of its conversation."""
    append(principal, *(f"turn {index} about the kitchen renovation" for index in range(30)), **CTX)
    said = "The user is renovating the kitchen; " + "they compared tiles, ovens and budgets at length. " * 29
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "w1", "u1"), summary=said))
    assert len(said) > 1400
    body = context(agent_client, query="what were we doing?", max_chars=1200)
    summary = body["block"].split("[Conversation summary]\n")[1].split("\n\n")[0]
    assert summary.startswith("The user is renovating the kitchen;") and summary.endswith("…")
    assert 80 <= len(summary) < len(said) and len(body["block"]) <= 1200
    assert not any(left.get("section") == "summary" for left in body["diagnostics"]["dropped"])
    small = context(agent_client, query="what were we doing?", max_chars=200)
    assert len(small["block"]) <= 200



def test_a_long_instruction_does_not_take_the_room_of_a_critical_constraint(principal, admin_client, agent_client):
    """A breaker's find: with instructions first, 1,150 characters of them pushed a severe
    allergy out of the default block; the allergy goes in before them."""
    assert admin_client.put("/api/v1/instructions", {"text": "Be kind. " * 128}, format="json").status_code == 200
    make_node(principal, user_id="u1", type="constraint", key="allergy", value_json="peanuts",
              title="severe peanut allergy (anaphylaxis)", importance=1.0)
    body = context(agent_client, max_chars=1200)
    assert "severe peanut allergy (anaphylaxis)" in body["block"] and len(body["block"]) <= 1200
    assert any("pinned instructions of the team" in warning for warning in body["diagnostics"]["warnings"])


def test_a_cut_summary_takes_only_what_the_other_items_left(principal, agent_client):
    """A breaker's find: the cut summary went in at its place in the second pass and pushed out a
    relevant memory and two recent messages that fitted before."""
    append(principal, *(f"turn {index} about the kitchen renovation" for index in range(30)), **CTX)
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "w1", "u1"),
                                                          summary="Kitchen renovation notes. " * 80))
    for index in range(12):
        make_node(principal, user_id="u1", type="fact", title=f"kitchen tiles option {index}: glossy white ceramic")
    without = context(agent_client, query="kitchen tiles", max_chars=1200, summary_enabled=False)
    body = context(agent_client, query="kitchen tiles", max_chars=1200)
    lines = [line for line in without["block"].splitlines() if line and not line.startswith("[")]
    assert len(lines) == 12 and all(line in body["block"].splitlines() for line in lines)
    summary = body["block"].split("[Conversation summary]\n")[1].split("\n\n")[0]
    assert summary.startswith("Kitchen renovation notes.") and summary.endswith("…")
    assert len(body["block"]) <= 1200


def test_long_instructions_leave_the_shares_of_what_is_left_and_the_summary_gives_way(principal, admin_client,
                                                                                   agent_client):
    """A breaker's find: 765 characters of instructions placed first left the summary's share of
    the whole block, so a 350-character summary went in whole and no recent message did."""
    assert admin_client.put("/api/v1/instructions", {"text": "Be kind. " * 85}, format="json").status_code == 200
    append(principal, *(f"turn {index} about the garden" for index in range(30)), **CTX)
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "w1", "u1"),
                                                          summary="Garden talk: " + "roses and tulips, " * 19))
    body = context(agent_client, query="what next?", max_chars=1200)
    assert body["block"].startswith("[Instructions]\nBe kind.") and len(body["block"]) <= 1200
    assert "user: turn 29 about the garden" in body["block"]
    assert "[Conversation summary]" in body["block"]  # cut to what the recent window left, or whole


def test_two_memories_that_say_the_same_are_shown_once(principal, agent_client):
    """A find of the demo: two keys holding one value ("taste" and "diet_style", both 喜欢清淡)
    put `- 喜欢清淡` twice in the block; one is omitted as same_text, wherever it comes
    from (a standing layer or the query's hits), up to case and script."""
    first = make_node(principal, scope="session", workspace_id="w1", user_id="u1", session_id="s1",
                      type="preference", key="taste", value_json="喜欢清淡", title="喜欢清淡")
    second = make_node(principal, scope="session", workspace_id="w1", user_id="u1", session_id="s1",
                       type="preference", key="diet_style", value_json="喜歡清淡", title="喜歡清淡")
    other = make_node(principal, scope="session", workspace_id="w1", user_id="u1", session_id="s1",
                      type="preference", key="spice", value_json="不吃辣", title="不吃辣")
    for query in ("", "清淡"):
        body = context(agent_client, query=query)
        lines = body["block"].splitlines()
        assert sum(1 for line in lines if line in ("- 喜欢清淡", "- 喜歡清淡")) == 1, body["block"]
        assert "- 不吃辣" in lines
        # the first in fill priority stays: a layer lists its newest first
        assert {"node_id": first.pk, "reason": "same_text"} in body["omitted"]
        assert second.pk in body["used_memory_ids"] and other.pk in body["used_memory_ids"]
        assert first.pk not in body["used_memory_ids"]
    workspace = make_node(principal, scope="workspace", workspace_id="w1", type="fact",
                          title="Dinner is at seven")
    hit = make_node(principal, scope="user", workspace_id="", user_id="u1", type="fact", title="dinner is at SEVEN")
    body = context(agent_client, query="when is dinner")
    assert sum(1 for line in body["block"].lower().splitlines() if line == "- dinner is at seven") == 1
    assert workspace.pk in body["used_memory_ids"]
    assert {"node_id": hit.pk, "reason": "same_text"} in body["omitted"]


def test_the_newest_turns_go_in_before_the_hits_the_shares_held_back(principal, agent_client):
    """A review's find on LoCoMo (conv26-s19, default budget 1,200): "thanks, talk soon" filled
    L5 with five earlier turns matching "thank" and "talk" and kept one of the six recent turns.
    The three newest turns (SPEC R-CTX: recent messages 3–8) now go in before what the L5 share
    held back; the share itself still holds hits."""
    for index in range(5):
        append(principal, f"Thanks for the talk about painting number {index}, let's talk soon! " + "o" * 90,
               session_id=f"old{index}", workspace_id="w1", user_id="u1")
    turns = [f"turn {index} of tonight: we compared the lake trip photos and the sunset colours " + "s" * 80
             for index in range(6)]
    append(principal, *turns, **CTX)
    body = context(agent_client, query="thanks, talk soon")
    recent = body["block"].split("[Recent messages]\n")[1].split("\n\n")[0].splitlines()
    assert len(recent) >= 3 and recent[-1].startswith("user: turn 5 of tonight")
    assert [line[6:12] for line in recent[-3:]] == ["turn 3", "turn 4", "turn 5"]
    assert "[Earlier messages]" in body["block"] and len(body["block"]) <= 1200


def test_a_critical_memory_is_never_hidden_behind_its_twin(principal, agent_client):
    """A breaker's find: the twin was chosen before the fit, so a session note saying 用户对花生过敏
    hid the user's allergy (importance 0.95) as same_text, and then its own layer was switched
    off (or the budget cut it): the block said nothing of the allergy."""
    said, = append(principal, "记住，我对花生过敏", **CTX)
    allergy = make_node(principal, scope="user", workspace_id="", user_id="u1", type="constraint", importance=0.95,
                        title="用户对花生过敏", content="推荐菜谱时绝对避免花生。", explicit=True,
                        source_message_ids=[said.pk])
    twin = make_node(principal, scope="session", workspace_id="w1", user_id="u1", session_id="s1", type="fact",
                     importance=0.2, title="用户对花生过敏", content="推荐菜谱时绝对避免花生。")
    line = "- 用户对花生过敏: 推荐菜谱时绝对避免花生。"
    for budget in ({}, {"l4_enabled": False}, {"max_chars": 125}):
        body = context(agent_client, query="晚饭吃什么", **budget)
        assert body["block"].count(line) == 1, (budget, body["block"])
        assert allergy.pk in body["used_memory_ids"] and twin.pk not in body["used_memory_ids"]
    switched_off = context(agent_client, query="晚饭吃什么", l2_enabled=False)  # the allergy's layer is off: the twin says it
    assert switched_off["block"].count(line) == 1 and twin.pk in switched_off["used_memory_ids"]


def test_the_newest_turns_go_in_after_the_standing_memories_the_shares_held_back(principal):
    """A breaker's find: the three newest turns went in before everything the shares held back,
    so "ok bye, see you tomorrow" pushed out a standing preference; they go before L5 only.
    Every budget from 100 to 490 characters keeps the memories the fill without RECENT_FIRST keeps."""
    import memory.selectors.context_fit as fit
    from memory.selectors.nodes import Owner
    from tests.memory.selectors.test_context import build

    for title in ("用户不吃香菜，推荐菜谱时避免香菜", "用户喜欢少油少辣的清淡口味菜", "用户不喝酒，也不吃含酒精的菜品",
                  "用户晚饭一般在七点左右吃", "用户对芒果有点敏感，少放"):
        make_node(principal, scope="user", user_id="u1", type="preference", title=title, importance=0.8)
    make_node(principal, scope="workspace", workspace_id="w1", type="constraint", title="本厨房不提供生食，所有菜品必须煮熟",
              importance=0.7)
    append(principal, "thanks a lot, that was really helpful", "no problem at all, talk to you soon!",
           "ok bye, see you tomorrow evening my friend", "and thanks again for it, really", **CTX)
    owner = Owner(workspace_id="w1", user_id="u1", session_id="s1")
    for max_chars in range(100, 500, 10):
        with_turns_first = set(build(principal, owner=owner, budget={"max_chars": max_chars}).used_memory_ids)
        fit.RECENT_FIRST, kept = 0, fit.RECENT_FIRST
        try:
            without = set(build(principal, owner=owner, budget={"max_chars": max_chars}).used_memory_ids)
        finally:
            fit.RECENT_FIRST = kept
        assert without <= with_turns_first, max_chars
