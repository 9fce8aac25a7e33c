"""A turn a forgotten memory was taken from stays out of recall in the team an export is
imported into (R-STORE provable forgetting, R-OPS export). The mark was not in the file, so an
import recalled "…还有我对花生过敏。" again after the allergy had been forgotten for good."""

import json

import pytest

from memory.capture.summarize import RuleSummarizer
from memory.capture.summary_roll import summary_roll
from memory.errors import InvalidInput
from memory.models import AuditEvent, Message, Session, Summary
from memory.selectors.nodes import Owner
from tests.helpers import append
from tests.memory.portability.conftest import edit, export_bytes, import_bytes, reseal
from tests.memory.selectors.test_context import build
from tests.memory.services.test_forgotten_turns import NEW, OLD, QUESTION, forget, remember


@pytest.fixture
def forgotten(admin_principal):
    both, = append(admin_principal, "记住，我最喜欢芒果冰淇淋，还有我对花生过敏。", **OLD)
    append(admin_principal, "我周末喜欢去爬山。", **OLD)
    remember(admin_principal, both, "用户最喜欢芒果冰淇淋")
    allergy = remember(admin_principal, both, "用户对花生过敏", type="constraint")
    forget(admin_principal, allergy, "hard")
    return both


def older_file(principal, summary: str = "") -> bytes:
    """The principal's team export as a file written before messages carried their mark (and,
    with `summary`, before a forget stripped its summaries) would hold it."""
    lines = export_bytes(principal).splitlines(keepends=True)
    for index, line in enumerate(lines):
        record = json.loads(line)
        if record.get("type") == "message":
            record["fields"].pop("memory_forgotten_at")
        elif record.get("type") == "summary" and summary:
            record["fields"]["summary"] = summary
        lines[index] = (json.dumps(record, ensure_ascii=False) + "\n").encode()
    return reseal(lines)


def imported_turn(target):
    return Message.objects.get(team=target.team, content__startswith="记住，我最喜欢芒果冰淇淋")


def test_the_mark_travels_with_the_turn(admin_principal, target, forgotten):
    data = export_bytes(admin_principal)
    [record] = [json.loads(line) for line in data.splitlines() if b'"message"' in line and "花生".encode() in line]
    assert record["fields"]["memory_forgotten_at"] is not None
    import_bytes(target, data)
    turn = imported_turn(target)
    assert turn.memory_forgotten_at == Message.objects.get(pk=forgotten.pk).memory_forgotten_at
    block = build(target, QUESTION, owner=NEW).block
    assert "花生" not in block and "我周末喜欢去爬山" in block and "用户最喜欢芒果冰淇淋" in block


def test_a_file_written_before_the_mark_existed_still_imports(admin_principal, target, forgotten):
    data = edit(export_bytes(admin_principal), "message", lambda record: record["fields"].pop("memory_forgotten_at"))
    import_bytes(target, data)
    assert Message.objects.filter(team=target.team, memory_forgotten_at__isnull=True).count() == 2


def test_an_older_file_gets_the_marks_of_its_soft_forgotten_memories(admin_principal, target):
    """A review's find: a file written before the mark, holding a soft-forgotten memory and its
    source links, imported with no marks, and a new conversation recalled the turn again."""
    both, = append(admin_principal, "记住，我最喜欢芒果冰淇淋，还有我对花生过敏。", **OLD)
    append(admin_principal, "我周末喜欢去爬山。", **OLD)
    allergy = remember(admin_principal, both, "用户对花生过敏", type="constraint")
    forget(admin_principal, allergy, "soft")
    result = import_bytes(target, older_file(admin_principal))
    assert imported_turn(target).memory_forgotten_at is not None
    assert "花生" not in build(target, QUESTION, owner=NEW).block
    assert AuditEvent.objects.get(pk=result.import_event_id).payload["marked_messages"] == 1


@pytest.mark.parametrize("value,problem", [("yesterday", "memory_forgotten_at"), (17, "memory_forgotten_at"),
                                           ("2026-12-01T10:00:00", "memory_forgotten_at"),
                                           ("2999-01-01T00:00:00+00:00", "memory_forgotten_at is in the future")])
def test_a_bad_mark_is_refused_with_its_line(admin_principal, target, forgotten, value, problem):
    data = edit(export_bytes(admin_principal), "message",
                lambda record: record["fields"].update(memory_forgotten_at=value))
    before = Message.objects.filter(team=target.team).count()
    with pytest.raises(InvalidInput, match=problem):
        import_bytes(target, data)
    assert Message.objects.filter(team=target.team).count() == before


def test_the_owner_sees_the_same_block_before_and_after_the_move(admin_principal, target, forgotten):
    before = build(admin_principal, QUESTION, owner=Owner(**{**OLD, "session_id": "new"})).block
    import_bytes(target, export_bytes(admin_principal))
    assert build(target, QUESTION, owner=NEW).block == before


def test_an_older_file_s_summaries_lose_what_its_forgotten_memories_say(admin_principal, target):
    """A third review's find: an older file (no marks, summaries as they were before forgets
    stripped them) imported with its marks rebuilt but the summary still saying the allergy."""
    both, = append(admin_principal, "记住，我对花生过敏。", **OLD)
    append(admin_principal, "我周末喜欢去爬山。", **OLD)
    session = Session.objects.get(team=admin_principal.team, external_id="old")
    original = summary_roll(principal=admin_principal, session=session, summarizer=RuleSummarizer(),
                            max_chars=600).summary
    allergy = remember(admin_principal, both, "用户对花生过敏", type="constraint")
    forget(admin_principal, allergy, "soft")
    import_bytes(target, older_file(admin_principal, summary=original))
    assert "花生" in original
    assert "花生" not in Summary.objects.get(team=target.team).summary
    assert "花生" not in build(target, "", owner=Owner(**OLD)).block
