"""A file whose links contradict each other is refused naming the line, and nothing is stored:
self-links, loops in parent and supersede chains, links that leave their session, memories
whose owner is not their session's (docs/export.md, "Import").

Source ids of the `filled` team's export: sessions 1 (home, xiaoming), 2 (trips, xiaoming),
3 (office, bob); messages 1–8 in session 1, 9–12 in session 2; summaries 1 (session 1) and
2 ← 3 (session 2); nodes 1 ← 3 ← 4 ← 6 a supersede chain of xiaoming's, 13 bob's user memory.
"""

import pytest

from tests.memory.portability.conftest import edit, export_bytes, refused


@pytest.fixture
def exported(filled):
    return export_bytes(filled)


def _change(data: bytes, record_type: str, source_id: int, change) -> bytes:
    return edit(data, record_type, change, where=lambda record: record["id"] == source_id)


def _refs(**refs):
    return lambda record: record["refs"].update(refs)


def test_a_node_that_supersedes_itself_is_refused(exported, target):
    refused(target, _change(exported, "node", 3, _refs(supersedes=3)), r"line \d+: node 3 names itself as its supersedes")


def test_a_node_that_is_its_own_parent_is_refused(exported, target):
    refused(target, _change(exported, "node", 9, _refs(parent=9)), r"line \d+: node 9 names itself as its parent")


def test_a_supersede_chain_that_loops_is_refused(exported, target):
    refused(target, _change(exported, "node", 1, _refs(supersedes=6)),
            r"line \d+: node \d+: its supersedes chain loops back to itself")


def test_a_node_superseded_twice_is_refused(exported, target):
    refused(target, _change(exported, "node", 2, _refs(supersedes=1)),
            r"line \d+: node 1 is named as supersedes by both node 2 and 3")


def test_messages_that_are_each_others_parent_are_refused(exported, target):
    data = _change(_change(exported, "message", 1, _refs(parent=2)), "message", 2, _refs(parent=1))
    refused(target, data, r"line \d+: message \d: its parent chain loops back to itself")


def test_a_message_whose_parent_is_in_another_session_is_refused(exported, target):
    refused(target, _change(exported, "message", 9, _refs(parent=1)),
            r"line \d+: message record: parent 1 is in another session")


def test_summaries_that_are_each_others_parent_are_refused(exported, target):
    refused(target, _change(exported, "summary", 2, _refs(parent=3)),
            r"line \d+: summary \d: its parent chain loops back to itself")


def test_a_summary_range_reaching_into_another_session_is_refused(exported, target):
    refused(target, _change(exported, "summary", 1, _refs(to_message=9)),
            r"line \d+: summary record: to_message 9 is in another session")


def test_a_summary_range_that_ends_before_it_starts_is_refused(exported, target):
    refused(target, _change(exported, "summary", 1, _refs(from_message=8, to_message=1)),
            r"line \d+: summary record: from_message 8 comes after to_message 1")


def test_a_session_memory_in_another_users_session_is_refused(exported, target):
    def tie_to_xiaomings_session(record):
        record["fields"].update(scope="session", workspace_id="home", user_id="bob")
        record["refs"].update(session=1)

    refused(target, _change(exported, "node", 13, tie_to_xiaomings_session),
            r"line \d+: node record: a session memory of workspace 'home' and user 'bob' in a session of "
            r"workspace 'home' and user 'xiaoming'")


def test_a_session_memory_citing_another_sessions_messages_is_refused(exported, target):
    def make_session_memory(record):
        record["fields"].update(scope="session", workspace_id="home")
        record["refs"].update(session=1, source_messages=[10])

    refused(target, _change(exported, "node", 1, make_session_memory),
            r"line \d+: node record \(session scope\): source message 10 is in another session")
