"""A keyless note is one note whatever its punctuation (R-STORE; memory.services.node_input.note_text,
migration 0021)."""

from datetime import UTC, datetime

import pytest
from django_scopes import scope

from accounts.principal import principal_for_key
from accounts.services import agent_key_create
from memory.capture.consolidate import nodes_merge_duplicates
from memory.errors import Conflict
from memory.models import Node
from memory.services.node_input import NodeInput, conflict_slot, note_text
from memory.services.nodes import node_update
from memory.services.upsert import node_upsert
from tests.helpers import latest_migrations, make_node, migrate_to


@pytest.mark.parametrize(("left", "right"), [
    ("我今天非常开心", "我今天非常开心。"),
    ("「用户 不吃香菜」", "用户不吃香菜！"),
    ("I like tea.", "i like  TEA!"),
    ("Deploy on Fridays: never", "deploy on fridays never!"),
    ("用户说“好”", "用户说好"),  # quotes of Chinese text only enclose
    ("用户不吃“香菜”", "用户不吃香菜"),
    ("ＬＩＫＥＳ　ＧＲＥＥＮ　ＴＥＡ", "likes green tea"),
    ("頭髮很長", "头发很长"),
    ("❤️ NY", "❤ NY"),  # an emoji's variation selector
    ("“quoted” text, see above", "quoted text see above"),
    ("我，你", "我、你"),
    ("用户喜欢 Python", "用户喜欢Python"),
    ("User doesn't like cilantro", "User doesn’t like cilantro"),  # a phone keyboard's apostrophe
    ("3-5 days", "3–5 days"),
    ("−5", "-5"),
    ("Note：meeting at 5pm。", "Note: meeting at 5pm"),  # an input method's colon has its own spacing
    ("比例1：2", "比例1:2"),
])
def test_notes_differing_in_punctuation_case_width_spacing_or_script_read_the_same(left, right):
    assert note_text(left) == note_text(right)


@pytest.mark.parametrize(("left", "right"), [
    ("version 3.5", "version 35"),
    ("therapist", "the rapist"),
    ("👍", "👎"),
    ("不吃香菜", "不吃葱"),
    # a mark that is part of what the note says, and symbols (a newcomer's list)
    ("Temperature must stay at -5°C", "Temperature must stay at 5°C"),
    ("User knows C++", "User knows C#"),
    ("User knows C#", "User knows C"),
    ("Budget is $5", "Budget is €5"),
    ("User 👍 cilantro", "User 👎 cilantro"),
    ("I ❤ NY", "I 💔 NY"),
    ("Score +1", "Score -1"),
    ("x = y", "x != y"),
    ("x > y", "x < y"),
    ("10%", "10"),
    ("email a@b.com", "email a.b@com"),
    ("Ratio is 3.5", "Ratio is 3 5"),
    ("Dose 1/2 pill", "Dose 1 2 pill"),
    ("Version 1.2.3", "Version 1-2-3"),
    (".5 pill", "5 pill"),
    ("co-op", "coop"),
    ("it's", "its"),
    # a second newcomer's list: a sign after a Chinese character, a comma that changes the meaning
    ("气温-5度", "气温5度"),
    ("余额-200元", "余额200元"),
    ("不，要辣", "不要辣"),
    ("苹果、香蕉", "苹果香蕉"),
    ("grade A-", "grade A"),
    ("it was –5°C", "it was 5°C"),
    ("3 - 5", "3 5"),
    # a third newcomer's list: a separator between a Chinese word and a number or Latin word, a
    # mark standing alone or starting a word, ? and brackets, forms NFKC would make digits, Hangul
    ("不是，5点开会", "不是5点开会"),
    ("不要，iPhone就行", "不要iPhone就行"),
    ("User's CSV files use ; as the delimiter", "User's CSV files use , as the delimiter"),
    ("PATH separator is :", "PATH separator is ;"),
    ("Guard clause: if (!token) return early", "Guard clause: if (token) return early"),
    ("set verbose = !quiet", "set verbose = quiet"),
    ("email?: string", "email: string"),
    ("Deploy on Friday?", "Deploy on Friday."),
    ("Secrets are loaded from .env", "Secrets are loaded from env"),
    ("Default is []", "Default is {}"),
    ("[0, 1)", "[0, 1]"),
    ("Balance is (500)", "Balance is 500"),
    ("The shelf is 5' wide", 'The shelf is 5" wide'),
    ("气温—5度", "气温5度"),
    ("Dose is ,5 mg", "Dose is 5 mg"),
    ("Budget is 10⁶ dollars", "Budget is 106 dollars"),
    ("选①②", "选12"),
    ("아버지가 방에 들어가신다", "아버지 가방에 들어가신다"),
])
def test_notes_differing_in_words_symbols_or_marks_that_say_something_do_not(left, right):
    assert note_text(left) != note_text(right)


def test_the_second_write_of_a_note_finds_the_first_whatever_its_punctuation(principal):
    first = node_upsert(principal=principal, data=NodeInput(scope="user", user_id="u1", type="fact",
                                                            title="今天和朋友去爬山，非常开心")).node
    again = node_upsert(principal=principal, data=NodeInput(scope="user", user_id="u1", type="fact",
                                                            title="今天和朋友去爬山,非常开心。"))
    assert (again.node.pk, again.created, again.changed) == (first.pk, False, False)
    assert Node.objects.get(pk=first.pk).title == "今天和朋友去爬山，非常开心"  # the stored text stays as written
    with pytest.raises(Conflict):
        make_node(principal, type="fact", title="今天和朋友去爬山！非常开心")
    other = make_node(principal, type="fact", title="今天和朋友去爬山，不太开心")
    assert Node.objects.filter(status="active").count() == 2 and other.pk != first.pk


@pytest.mark.django_db(transaction=True)
def test_migration_0021_gives_each_keyless_note_its_slot_by_words_and_keeps_twins_active(team):
    latest = latest_migrations()
    try:
        apps = migrate_to([("memory", "0020_lexicon")])
        HistoricalNode = apps.get_model("memory", "Node")

        def note(title, *, day, status="active", user_id="u1", slot=None, **fields):
            when = datetime(2026, 1, day, tzinfo=UTC)
            node = HistoricalNode.objects.create(team_id=team.pk, scope="user", user_id=user_id, domain="general",
                                                 type="fact", title=title, status=status, created_at=when,
                                                 updated_at=when,
                                                 slot=f"old-{title}-{status}-{user_id}" if slot is None else slot,
                                                 **fields)
            return node.pk

        older = note("我今天非常开心", day=1)
        newer = note("我今天非常开心。", day=2)
        gone = note("我今天非常开心!", day=3, status="deleted")
        elsewhere = note("我今天非常开心！", day=1, user_id="u2")
        kept_legacy = note("我今天非常开心~", day=1, slot="legacy:7")  # another note ("~" is kept)
        keyed = note("偏好", day=1, key="drink", value_json="tea", slot="")

        migrate_to([("memory", "0021_note_slots")])

        words = conflict_slot(key="", value=None, cardinality="one", title="我今天非常开心", content="")
        slots = dict(Node.objects.values_list("pk", "slot"))
        # the oldest twin keeps the slot: the one consolidation keeps
        assert slots == {older: words, newer: f"legacy:{newer}", gone: words, elsewhere: words,
                         kept_legacy: "legacy:7", keyed: ""}
        assert set(Node.objects.values_list("status", flat=True)) == {"active", "deleted"}
        assert Node.objects.filter(status="active").count() == 5

        nodes_merge_duplicates(team=team, user_id="u1")
        active = Node.objects.filter(status="active", user_id="u1", key="")
        assert set(active.values_list("pk", flat=True)) == {older, kept_legacy}
        principal = principal_for_key(agent_key_create(team=team, name="after", kind="admin")[0])
        with scope(team=team):
            again = node_upsert(principal=principal, data=NodeInput(scope="user", user_id="u1", type="fact",
                                                                    title="我今天非常开心！"))
        assert (again.node.pk, again.created) == (older, False)
    finally:
        migrate_to(latest)


@pytest.mark.django_db(transaction=True)
def test_migration_0023_reslots_notes_with_a_wide_separator_before_a_letter(team):
    latest = latest_migrations()
    try:
        apps = migrate_to([("memory", "0022_message_said_index")])
        HistoricalNode = apps.get_model("memory", "Node")

        def note(title, slot, day):
            when = datetime(2026, 1, day, tzinfo=UTC)
            return HistoricalNode.objects.create(team_id=team.pk, scope="user", user_id="u1", domain="general",
                                                 type="fact", title=title, status="active", slot=slot,
                                                 created_at=when, updated_at=when).pk

        def slot(title):
            return conflict_slot(key="", value=None, cardinality="one", title=title, content="")

        wide = note("Note：meeting at 5pm", "old-reading", 1)  # as the reading before 0023 gave it
        spaced = note("Note: meeting at 5pm", slot("Note: meeting at 5pm"), 2)
        alone = note("Memo：buy milk", "old-reading-2", 3)
        chinese = note("比例1：2，好", slot("比例1：2，好"), 4)  # before a digit or Han: read as before

        migrate_to([("memory", "0023_wide_separator_slots")])

        assert dict(Node.objects.values_list("pk", "slot")) == {
            wide: f"legacy:{wide}", spaced: slot("Note: meeting at 5pm"), alone: slot("Memo: buy milk"),
            chinese: slot("比例1:2，好")}
        nodes_merge_duplicates(team=team, user_id="u1")  # the twins merge into the oldest, which takes the slot
        assert dict(Node.objects.filter(status="active").values_list("pk", "slot")) == {
            wide: slot("Note: meeting at 5pm"), alone: slot("Memo: buy milk"), chinese: slot("比例1:2，好")}
    finally:
        migrate_to(latest)


def test_an_explicit_edit_of_only_punctuation_or_case_is_stored_as_sent(principal):
    node = make_node(principal, type="fact", title="user likes tea")
    edited = node_update(principal=principal, node_id=node.pk, changes={"title": "User likes tea."}, reason="fix")
    assert (edited.title, edited.version) == ("User likes tea.", node.version + 1)
    assert edited.slot == node.slot  # the same note: its slot stays


@pytest.mark.parametrize("twin", ["likes tea!!", "likes tea…", "likes tea。", "「likes tea」"])
def test_a_run_of_marks_that_ends_a_note_reads_as_nothing(twin):
    assert note_text(twin) == note_text("likes tea")
