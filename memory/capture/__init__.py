"""Background capture (R-EXTRACT; seed 000 抽取流程, 链式摘要; seed 004 distiller).

The shapes every extractor and summarizer shares (`memory.capture.base`), the rule-based and
LLM implementations, and the jobs that run them after a turn (`memory.capture.jobs`).
"""
