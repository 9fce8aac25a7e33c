from memory.search.text import document_tokens, index_tokens, normalize, query_tokens


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
    assert query_tokens("少油香菜") == ["少油", "油香", "香菜"]
    assert query_tokens("辣") == ["辣"]
    assert query_tokens("When did Caroline go to the support group?") == ["carolin", "go", "support", "group"]


def test_query_drops_bigrams_of_chinese_function_words_unless_nothing_else_is_left():
    # 我们 and 可以 are stop words, 去 and 吗 grammar characters: 们可 and 以去 lie between them.
    assert query_tokens("我们可以去爬山吗？") == ["去爬", "爬山", "山吗"]
    assert query_tokens("因为 hiking") == ["hike"]
    assert query_tokens("你是我的朋友") == ["的朋", "朋友"]  # only bigrams of grammar alone go
    # A negation is grammar too, as "not" is an English stop word; 香菜 still finds 不要香菜.
    assert query_tokens("不要香菜") == ["要香", "香菜"]
    # A query of function words alone still looks for them (traditional forms fold first).
    assert query_tokens("這個") == ["这个"]
    assert query_tokens("可以吗") == ["可以", "以吗"]
    # The index keeps them: a document is found by a query of function words.
    assert "可以" in index_tokens("我们可以去爬山")


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
