import pytest

from memory.errors import InvalidInput, NotFound
from memory.models import Summary
from memory.selectors.summaries import summary_latest
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append
from tests.helpers import append

REF = SessionRef(session_id="s1", user_id="u1")


def test_summaries_chain_with_contiguous_ranges(principal):
    m = append(principal, "m1:你好", "m2:点一碗面", "m3:改成米饭")
    first = summary_append(principal=principal, data=SummaryInput(session=REF, summary="S1"))
    m += append(principal, "m4", "m5", "m6")
    second = summary_append(principal=principal, data=SummaryInput(session=REF, summary="S2"))
    assert (first.from_message_id, first.to_message_id) == (m[0].pk, m[2].pk)
    assert (second.from_message_id, second.to_message_id) == (m[3].pk, m[5].pk)
    assert second.parent_id == first.pk and first.parent_id is None
    assert summary_latest(principal=principal, ref=REF).pk == second.pk


def test_a_range_that_overlaps_or_leaves_a_gap_is_rejected(principal):
    m = append(principal, "m1", "m2", "m3")
    summary_append(principal=principal, data=SummaryInput(session=REF, summary="S1", to_message_id=m[0].pk))
    with pytest.raises(InvalidInput):  # overlap: m1 is already summarised
        summary_append(principal=principal, data=SummaryInput(session=REF, summary="x", from_message_id=m[0].pk))
    with pytest.raises(InvalidInput):  # gap: m2 would be skipped
        summary_append(principal=principal, data=SummaryInput(session=REF, summary="x", from_message_id=m[2].pk))
    assert Summary.objects.count() == 1


def test_nothing_new_to_summarise_is_rejected(principal):
    append(principal, "m1")
    summary_append(principal=principal, data=SummaryInput(session=REF, summary="S1"))
    with pytest.raises(InvalidInput):
        summary_append(principal=principal, data=SummaryInput(session=REF, summary="S2"))


def test_summary_of_an_unknown_session_is_not_found(principal):
    with pytest.raises(NotFound):
        summary_append(principal=principal, data=SummaryInput(session=REF, summary="S"))


def test_latest_summary_of_another_users_session_is_not_found(principal):
    append(principal, "m1", user_id="u1")
    summary_append(principal=principal, data=SummaryInput(session=REF, summary="S1"))
    with pytest.raises(NotFound):
        summary_latest(principal=principal, ref=SessionRef(session_id="s1", user_id="u2"))


def test_to_message_from_another_session_is_rejected(principal):
    append(principal, "m1")
    other = append(principal, "x", session_id="s2")[0]
    with pytest.raises(InvalidInput):
        summary_append(principal=principal, data=SummaryInput(session=REF, summary="S", to_message_id=other.pk))
