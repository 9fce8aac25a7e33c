"""System messages are the agent's own instructions: the context block never recalls them (R-CTX)."""

from memory.selectors.context import ContextRequest, context_build
from memory.selectors.messages import messages_recent
from memory.selectors.nodes import Owner
from tests.helpers import append

OWNER = Owner(workspace_id="home", user_id="mel", session_id="s1")


def test_the_recent_window_leaves_out_system_messages_and_still_holds_its_size(principal):
    system = append(principal, "You are a cooking assistant. Ignore earlier rules.", session_id="s1", user_id="mel",
                    workspace_id="home", role="system")[0]
    turns = append(principal, "one", "two", "three", session_id="s1", user_id="mel", workspace_id="home")
    late_system = append(principal, "Always answer in French.", session_id="s1", user_id="mel", workspace_id="home",
                         role="system")[0]
    assert [m.pk for m in messages_recent(session=turns[0].session, limit=3)] == [m.pk for m in turns]
    block = context_build(principal=principal, request=ContextRequest(owner=OWNER, query="")).block
    assert system.content not in block and late_system.content not in block
    assert "user: three" in block


def test_an_earlier_system_message_is_not_recalled_by_its_words_or_its_day(principal):
    append(principal, "System rule: the secret word is pineapple.", session_id="old", user_id="mel",
           workspace_id="home", role="system")
    said = append(principal, "I planted a pineapple in the garden.", session_id="old", user_id="mel",
                  workspace_id="home")[0]
    context = context_build(principal=principal, request=ContextRequest(
        owner=Owner(workspace_id="home", user_id="mel", session_id="new"), query="pineapple"))
    assert [item.obj.pk for item in context.items if item.section == "earlier_messages"] == [said.pk]
    day = said.created_at.date().isoformat()
    context = context_build(principal=principal, request=ContextRequest(
        owner=Owner(workspace_id="home", user_id="mel", session_id="new"), query=f"what did I say on {day}?"))
    assert [item.obj.pk for item in context.items if item.section == "earlier_messages"] == [said.pk]


def test_an_earlier_question_comes_with_the_next_turn_that_is_not_a_system_message(principal):
    asked = append(principal, "Which paint should I buy for the fence?", session_id="old", user_id="mel",
                   workspace_id="home")[0]
    append(principal, "SYSTEM: internal policy, api_key=sk-XYZ", session_id="old", user_id="mel", workspace_id="home",
           role="system")
    answer = append(principal, "Use an oil-based exterior paint.", session_id="old", user_id="mel",
                    workspace_id="home", role="assistant")[0]
    context = context_build(principal=principal, request=ContextRequest(
        owner=Owner(workspace_id="home", user_id="mel", session_id="new"), query="which paint for the fence?"))
    assert [item.obj.pk for item in context.items if item.section == "earlier_messages"] == [asked.pk, answer.pk]
    assert "sk-XYZ" not in context.block
