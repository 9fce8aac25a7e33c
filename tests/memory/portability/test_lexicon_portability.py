"""Synonym sets in export files (docs/export.md): a team export carries every set, a workspace
export that workspace's, a user export none; an import checks and normalises the terms again
and replaces a set with the same terms at the same level."""

import json

import pytest

from memory.errors import InvalidInput
from memory.models import LexiconSet
from memory.selectors.nodes import Owner
from memory.selectors.query import MemoryQuery, memory_query
from memory.services.lexicon import lexicon_set_save
from tests.helpers import make_node
from tests.memory.portability.conftest import edit, export_bytes, import_bytes


def records(data: bytes, record_type: str) -> list[dict]:
    return [record for record in map(json.loads, data.splitlines()) if record["type"] == record_type]


@pytest.fixture
def source(admin_principal):
    lexicon_set_save(principal=admin_principal, terms=["过敏", "敏感"])
    lexicon_set_save(principal=admin_principal, terms=["inn", "hotel"], workspace_id="trips")
    make_node(admin_principal, title="对花粉很敏感", user_id="u1")
    return admin_principal


def test_a_team_export_carries_every_set_and_the_import_restores_them(source, target):
    data = export_bytes(source)
    assert [record["fields"]["terms"] for record in records(data, "lexicon_set")] == [["过敏", "敏感"], ["inn", "hotel"]]
    import_bytes(target, data)
    assert sorted(LexiconSet.objects.filter(team=target.team).values_list("workspace_id", "terms")) == [
        ("", ["过敏", "敏感"]), ("trips", ["inn", "hotel"])]
    found = memory_query(principal=target, query=MemoryQuery(owner=Owner(user_id="u1"), query_text="过敏"))
    assert [node.title for node in found.relevant] == ["对花粉很敏感"]


def test_a_workspace_export_carries_its_sets_only_and_a_user_export_none(source):
    assert [record["fields"]["workspace_id"] for record in
            records(export_bytes(source, "workspace", workspace_id="trips"), "lexicon_set")] == ["trips"]
    assert records(export_bytes(source, "user", user_id="u1"), "lexicon_set") == []


def test_an_import_normalises_terms_and_replaces_the_same_set(source, target):
    lexicon_set_save(principal=target, terms=["敏感", "过敏"])
    data = edit(export_bytes(source), "lexicon_set", lambda record: record["fields"].update(terms=["過敏", "敏感"]))
    import_bytes(target, data)
    assert list(LexiconSet.objects.filter(team=target.team, workspace_id="").values_list("terms", flat=True)) == [
        ["过敏", "敏感"]]


@pytest.mark.parametrize("terms", [["过敏"], ["过敏", "過敏"], ["过敏", "x\x00"], "过敏"])
def test_an_import_refuses_a_set_the_api_would_refuse_and_stores_nothing(source, target, terms):
    data = edit(export_bytes(source), "lexicon_set", lambda record: record["fields"].update(terms=terms))
    with pytest.raises(InvalidInput):
        import_bytes(target, data)
    assert not LexiconSet.objects.filter(team=target.team).exists()
