"""The retrieval evaluation harness (issue 7): loaders, evidence cleaning, scoring, and a whole
run of `manage.py evaluate` on small files shaped like the shared data."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Team
from memory.evaluation.baseline import BM25Baseline
from memory.evaluation.datasets import clean_evidence, locomo_load, madial_load
from memory.evaluation.runner import Series

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to the LGBTQ support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "That sounds wonderful, how was it?"},
            {"speaker": "Caroline", "dia_id": "D1:3", "text": "Inspiring. I want to study counseling."},
        ],
        "session_2_date_time": "10:00 am on 20 May, 2023",
        "session_2": [
            {"speaker": "Melanie", "dia_id": "D2:1", "text": "I painted a sunrise over the lake last week.",
             "blip_caption": "a painting of a sunrise"},
            {"speaker": "Caroline", "dia_id": "D2:2", "text": "Lovely! My pottery class starts in June."},
        ],
    },
    "qa": [
        {"question": "When did Caroline go to the LGBTQ support group?", "evidence": ["D1:1"], "category": 2},
        {"question": "What did Melanie paint?", "evidence": ["D:2:01; D9:9"], "category": 1},
        {"question": "What career does Caroline want?", "evidence": ["D1:3", "D1:03"], "category": 4},
        {"question": "Adversarial", "evidence": ["D1:1"], "category": 5},
        {"question": "No evidence", "evidence": [], "category": 1},
    ],
}


def test_evidence_is_cleaned_as_the_data_readme_says():
    known = {"D1:3", "D11:26", "D2:1"}
    assert clean_evidence(["D:11:26", "D1:03; D2:1", "D9:9", "nonsense"], known) == {"D11:26", "D1:3", "D2:1"}


def test_locomo_questions_keep_categories_1_to_4_with_evidence(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    [conversation] = locomo_load(path)
    assert [question.evidence for question in conversation.questions] == [
        frozenset({"D1:1"}), frozenset({"D2:1"}), frozenset({"D1:3"})]
    assert [turn.role for turn in conversation.turns] == ["user", "assistant", "user", "assistant", "user"]
    assert conversation.turns[3].content.endswith("[shares an image: a painting of a sunrise]")
    assert conversation.turns[3].session_id == "conv-x-s2" and conversation.turns[3].occurred_at.day == 20


def test_recall_at_k_counts_gold_ids_among_the_first_k_items():
    series = Series("m", (1, 2, 3))
    series.add([{"a"}, {"x"}, {"b", "c"}], frozenset({"a", "b"}))
    series.add([], frozenset({"a"}))
    assert series.summary()["recall"] == {1: 0.25, 2: 0.25, 3: 0.5}


def test_the_baseline_ranks_by_bm25_over_the_same_tokens():
    baseline = BM25Baseline(["我喜欢川菜和火锅", "the staging deploy runs pytest", "明天去公园野餐"])
    assert baseline.top("周末野餐去哪个公园", 3)[0] == 2
    assert baseline.top("Which tests run before the staging deploy?", 3)[0] == 1
    assert baseline.top("", 3) == [] and baseline.top("zzz", 3) == []


@pytest.mark.django_db(transaction=True)
def test_a_locomo_run_scores_every_question_and_leaves_no_team_behind(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    report = tmp_path / "report.json"
    out = StringIO()
    call_command("evaluate", "locomo", str(path), "--json", str(report), stdout=out)
    figures = json.loads(report.read_text())
    overall = figures["overall"]
    assert {name: method["questions"] for name, method in overall.items()} == {
        "bm25": 3, "context": 3, "search": 3, "budget": 3}
    # the support-group question names its turn: first for both the baseline and the product
    assert overall["bm25"]["recall"]["1"] >= 1 / 3 and overall["context"]["recall"]["1"] >= 1 / 3
    # "paint" does not match "painted" without stemming; the other two are found
    assert overall["context"]["recall"]["20"] >= 2 / 3
    assert 0 < overall["budget"]["chars_mean"] <= 1500
    assert "conv-x" in figures["per_conversation"] and "BM25 over turns" in out.getvalue()
    assert not Team.objects.filter(slug__startswith="eval-").exists()


@pytest.mark.django_db(transaction=True)
def test_a_madial_run_counts_identical_memories_once(tmp_path):
    memories = [
        {"1": {"time": "2023-12-25", "scene": "活动类", "emotion": "开心", "event": "Bart在圣诞节晚会上跳舞。", "id": "1"}},
        {"2": {"time": "2023-12-02", "scene": "喜好类", "emotion": "开心", "event": "妈妈给Bart买了自行车。", "id": "2"}},
        {"3": {"time": "2023-12-02", "scene": "喜好类", "emotion": "开心", "event": "妈妈给Bart买了自行车。", "id": "3"}},
    ] + [{str(10 + index): {"time": "2023-06-01", "scene": "日常类", "emotion": "平静", "event": event, "id": str(10 + index)}}
         for index, event in enumerate(["Bart在图书馆看书。", "Bart和爸爸下象棋。", "Bart学会了游泳。", "Bart养了一只小猫。",
                                        "Bart参加了数学竞赛。", "Bart去海边看日出。", "Bart做了一个蛋糕。", "Bart种了向日葵。"])]
    (tmp_path / "memory-user1.jsonl").write_text("\n".join(json.dumps(item, ensure_ascii=False) for item in memories))
    dialogue = {"dialogue": ["<BOD>\n", "<Bart>:\"我想骑我的新自行车去公园！\"\n", "<Assistant>:\"好呀\"\n", "<EOD>\n"],
                "test-turn": [2], "relevant-id": [2, 3], "user-id": 1, "id": 0}
    (tmp_path / "dialogue-user1.jsonl").write_text(json.dumps(dialogue, ensure_ascii=False))
    loaded, dialogues = madial_load(tmp_path)
    assert dialogues[0].query == "Bart: 我想骑我的新自行车去公园！" and dialogues[0].relevant == {"2", "3"}
    report = tmp_path / "report.json"
    call_command("evaluate", "madial", str(tmp_path), "--json", str(report), stdout=StringIO())
    overall = json.loads(report.read_text())["overall"]
    assert overall["search"]["recall"]["1"] == 1.0 and overall["bm25"]["recall"]["1"] == 1.0
    assert not Team.objects.filter(slug__startswith="eval-").exists()


def test_unknown_conversations_and_missing_data_are_clear_errors(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    with pytest.raises(CommandError, match="no conversation"):
        call_command("evaluate", "locomo", str(path), "--conversation", "conv-404", stdout=StringIO())
    with pytest.raises(CommandError, match="no such data"):
        call_command("evaluate", "madial", str(tmp_path / "absent"), stdout=StringIO())


@pytest.mark.parametrize("dataset,content,message", [
    ("locomo", None, "is not a file"),
    ("madial", "x", "is not a folder"),
    ("locomo", "{}", "expected a JSON list"),
    ("locomo", '[{"x": 1}]', "KeyError"),
    ("locomo", "not json", "cannot read"),
])
def test_data_of_the_wrong_shape_is_a_clear_error(tmp_path, dataset, content, message):
    path = tmp_path / "data"
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)
    with pytest.raises(CommandError, match=message):
        call_command("evaluate", dataset, str(path), stdout=StringIO())
