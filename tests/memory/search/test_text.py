from memory.search.text import (
    CJK_FUNCTION_CHARACTERS,
    MAX_QUERY_TOKENS,
    document_tokens,
    function_bigrams,
    index_tokens,
    normalize,
    query_tokens,
)


def test_normalize_folds_width_case_and_traditional_forms():
    assert normalize("ＡＰＰ５０") == "app50"
    assert normalize("Staging") == "staging"
    assert normalize("發佈臺灣") == "发布台湾"


def test_cjk_runs_give_bigrams_and_unigrams():
    assert index_tokens("不吃香菜") == ["不吃", "吃香", "香菜", "不", "吃", "香", "菜"]


def test_latin_words_split_from_han_without_spaces():
    tokens = index_tokens("发布前先跑pytest再推到Staging环境")
    assert "pytest" in tokens and "stage" in tokens and "环境" in tokens  # English words by their stem
    assert "跑pytest" not in tokens


def test_bigrams_never_cross_punctuation():
    assert "油少" not in index_tokens("少油，少辣")


def test_query_uses_bigrams_unigram_for_one_character_and_drops_stop_words():
    assert query_tokens("不要香菜") == ["不要", "要香", "香菜"]
    assert query_tokens("辣") == ["辣"]
    assert query_tokens("When did Caroline go to the support group?") == ["carolin", "go", "support", "group"]


def test_query_drops_bigrams_of_two_chinese_function_words_unless_nothing_else_is_left():
    assert query_tokens("我们可以去爬山吗？") == ["们可", "可以", "以去", "去爬", "爬山", "山吗"]  # not 我们
    assert query_tokens("你是我的朋友") == ["的朋", "朋友"]  # not 你是, 是我, 我的
    assert query_tokens("这个 hiking") == ["hike"]
    # words that name something stay, though a stop-word list may hold them
    assert query_tokens("本地用什么？") == ["本地", "地用", "用什"]
    assert "过去" in query_tokens("他过去在哪") and "结果" in query_tokens("测试结果如何")
    # a query of function words alone still looks for them (traditional forms fold first)
    assert query_tokens("這個") == ["这个"]
    assert query_tokens("我们不是") == ["我们", "们不", "不是"]
    # they score the rows the other words find (memory.selectors.query / messages)
    assert function_bigrams("我们可以去爬山吗？什么都行，我们") == ["我们", "什么", "么都"]
    assert function_bigrams("爬山") == []
    every_pair = "。".join(a + b for a in sorted(CJK_FUNCTION_CHARACTERS) for b in sorted(CJK_FUNCTION_CHARACTERS))
    assert function_bigrams(every_pair) == every_pair.split("。")[-MAX_QUERY_TOKENS:]  # the latest, as query_tokens
    # the index keeps them
    assert "我们" in index_tokens("我们可以去爬山")


def test_english_words_match_by_their_stem_in_index_and_query():
    assert set(query_tokens("What did Melanie paint?")) <= set(index_tokens("Melanie painted a sunrise"))
    assert query_tokens("deploys running")[0] in index_tokens("deploy")
    assert index_tokens("pytest2 café ci") == ["pytest2", "café", "ci"]  # not ASCII letters only: as they are


def test_full_width_digits_match_half_width_query():
    assert query_tokens("50")[0] in index_tokens("预算５０元以内")


def test_long_documents_keep_head_and_tail_tokens():
    text = " ".join(f"w{i}" for i in range(50_000)) + " END_MARKER_7"
    tokens = document_tokens([text]).split()
    assert len(tokens) <= 32_000
    assert "w0" in tokens and "marker" in tokens


def test_fields_are_kept_apart_for_weighting():
    assert document_tokens(["香菜", "", "tag"]).split(" | ") == ["香菜 香 菜", "", "tag"]


def test_normalize_folds_width_case_and_traditional_characters():
    from memory.search.text import normalize

    assert normalize("用戶不吃香菜 ＡＢＣ Straße") == "用户不吃香菜 abc strasse"
    assert normalize("體驗" * 300) == "体验" * 300
    assert normalize("") == ""
