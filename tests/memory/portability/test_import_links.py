"""A file whose links contradict each other is refused naming the line, and nothing is stored:
self-links, loops in parent and supersede chains, links that leave their session, memories
whose owner is not their session's (docs/export.md, "Import").

The `filled` team's export has sessions home/xiaoming, trips/xiaoming and office/bob, each with
messages; summaries of the first two (the trips chain has two links); a supersede chain of
xiaoming's user memories; bob's user memory and workspace memories. Source ids depend on the
database, so the tests look them up in the file.
"""

import json
from types import SimpleNamespace

import pytest

from tests.memory.portability.conftest import edit, export_bytes, refused


@pytest.fixture
def exported(filled):
    return export_bytes(filled)


@pytest.fixture
def ids(exported):
    records = [json.loads(line) for line in exported.splitlines()]
    of = {kind: [r for r in records if r["type"] == kind] for kind in ("session", "message", "summary", "node")}
    session = {r["fields"]["workspace_id"]: r["id"] for r in of["session"]}
    messages = {name: [r["id"] for r in of["message"] if r["refs"]["session"] == pk] for name, pk in session.items()}
    nodes = {r["id"]: r for r in of["node"]}
    newer = next(r for r in of["node"] if r["refs"]["supersedes"] and not nodes[r["refs"]["supersedes"]]["refs"]["supersedes"])
    older = newer["refs"]["supersedes"]
    chained = next(r["id"] for r in of["summary"] if r["refs"]["parent"])
    successor = {r["refs"]["supersedes"]: r["id"] for r in of["node"] if r["refs"]["supersedes"]}
    newest = older
    while newest in successor:
        newest = successor[newest]
    return SimpleNamespace(
        session=session, messages=messages, newer=newer["id"], older=older, newest=newest,
        other=next(pk for pk, r in nodes.items() if pk not in (newer["id"], older) and not r["refs"]["supersedes"]
                   and r["fields"]["scope"] == "user"),
        workspace_node=next(pk for pk, r in nodes.items() if r["fields"]["scope"] == "workspace"),
        bobs=next(pk for pk, r in nodes.items() if r["fields"]["user_id"] == "bob"),
        summary=of["summary"][0]["id"], chained=chained,
        chained_parent=next(r["refs"]["parent"] for r in of["summary"] if r["id"] == chained),
    )


def _change(data: bytes, record_type: str, source_id: int, change) -> bytes:
    return edit(data, record_type, change, where=lambda record: record["id"] == source_id)


def _refs(**refs):
    return lambda record: record["refs"].update(refs)


def test_a_node_that_supersedes_itself_is_refused(exported, target, ids):
    refused(target, _change(exported, "node", ids.newer, _refs(supersedes=ids.newer)),
            rf"line \d+: node {ids.newer} names itself as its supersedes")


def test_a_node_that_is_its_own_parent_is_refused(exported, target, ids):
    pk = ids.workspace_node
    refused(target, _change(exported, "node", pk, _refs(parent=pk)), rf"line \d+: node {pk} names itself as its parent")


def test_a_supersede_chain_that_loops_is_refused(exported, target, ids):
    refused(target, _change(exported, "node", ids.older, _refs(supersedes=ids.newest)),
            r"line \d+: node \d+: its supersedes chain loops back to itself")


def test_a_node_superseded_twice_is_refused(exported, target, ids):
    first, second = sorted((ids.newer, ids.other))
    refused(target, _change(exported, "node", ids.other, _refs(supersedes=ids.older)),
            rf"line \d+: node {ids.older} is named as supersedes by both node {first} and {second}")


def test_messages_that_are_each_others_parent_are_refused(exported, target, ids):
    one, two = ids.messages["home"][:2]
    data = _change(_change(exported, "message", one, _refs(parent=two)), "message", two, _refs(parent=one))
    refused(target, data, r"line \d+: message \d+: its parent chain loops back to itself")


def test_a_message_whose_parent_is_in_another_session_is_refused(exported, target, ids):
    home = ids.messages["home"][0]
    refused(target, _change(exported, "message", ids.messages["trips"][0], _refs(parent=home)),
            rf"line \d+: message record: parent {home} is in another session")


def test_summaries_that_are_each_others_parent_are_refused(exported, target, ids):
    refused(target, _change(exported, "summary", ids.chained_parent, _refs(parent=ids.chained)),
            r"line \d+: summary \d+: its parent chain loops back to itself")


def test_a_summary_range_reaching_into_another_session_is_refused(exported, target, ids):
    trips = ids.messages["trips"][0]
    refused(target, _change(exported, "summary", ids.summary, _refs(to_message=trips)),
            rf"line \d+: summary record: to_message {trips} is in another session")


def test_a_summary_range_that_ends_before_it_starts_is_refused(exported, target, ids):
    first, last = ids.messages["home"][0], ids.messages["home"][-1]
    refused(target, _change(exported, "summary", ids.summary, _refs(from_message=last, to_message=first)),
            rf"line \d+: summary record: from_message {last} comes after to_message {first}")


def test_a_session_memory_in_another_users_session_is_refused(exported, target, ids):
    def tie_to_xiaomings_session(record):
        record["fields"].update(scope="session", workspace_id="home", user_id="bob")
        record["refs"].update(session=ids.session["home"])

    refused(target, _change(exported, "node", ids.bobs, tie_to_xiaomings_session),
            r"line \d+: node record: a session memory of workspace 'home' and user 'bob' in a session of "
            r"workspace 'home' and user 'xiaoming'")


def test_a_session_memory_citing_another_sessions_messages_is_refused(exported, target, ids):
    trips = ids.messages["trips"][0]

    def make_session_memory(record):
        record["fields"].update(scope="session", workspace_id="home")
        record["refs"].update(session=ids.session["home"], source_messages=[trips])

    refused(target, _change(exported, "node", ids.other, make_session_memory),
            rf"line \d+: node record \(session scope\): source message {trips} is in another session")

