"""The keyword baseline every figure is compared with: Okapi BM25 (rank-bm25, k1 1.5, b 0.75)
over the same units and the same tokens as the product's index (memory.search.text:
index_tokens for documents — words, CJK bigrams and unigrams — and query_tokens for the
query, without the product's cap on query tokens). Ties keep document order."""

from collections.abc import Sequence

from rank_bm25 import BM25Okapi

from memory.search.text import index_tokens, query_tokens


class BM25Baseline:
    def __init__(self, documents: Sequence[str]):
        self.documents = list(documents)
        corpus = [index_tokens(text) or ["\x00empty"] for text in self.documents]
        self.vocabulary = [set(tokens) for tokens in corpus]
        self.model = BM25Okapi(corpus)

    def top(self, query: str, k: int) -> list[int]:
        """Indexes of the `k` best documents for `query`, best first (only documents sharing a
        token with it; Okapi idf can be negative in a tiny corpus)."""
        tokens = query_tokens(query, limit=None)
        if not tokens:
            return []
        scores = self.model.get_scores(tokens)
        order = sorted(range(len(scores)), key=lambda index: (-scores[index], index))
        wanted = set(tokens)
        return [index for index in order if self.vocabulary[index] & wanted][:k]
