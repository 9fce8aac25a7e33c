"""Retrieval evaluation on the shared real conversations (issue 7; R-QUERY, R-CTX).

datasets — LoCoMo and MADial-Bench loaders; baseline — BM25 (rank-bm25) over the same units and
tokens; runner — loads a dataset into a fresh team through the services and scores the
context and search calls; `manage.py evaluate` prints the tables.
"""
