"""The papers' baselines, each a registered program: closed-book, the RAC family and the count baselines.

DIVA's: ``ClosedBook``, ``VanillaRAG``, ``IterativeRAG`` and ``PerReadingRAG``; VerDICt's: ``RACTop20`` and
``DtVPseudo``; DFA's: ``LLMOnlyCount``, ``NaiveRAGCount`` and ``MapCount`` (``count``). RAC itself, the extract +
consolidate step these share with DIVA, is ``disambig.programs.rac``.
"""

from __future__ import annotations

from disambig.programs.baselines.closed_book import ClosedBook
from disambig.programs.baselines.count import LLMOnlyCount, MapCount, NaiveRAGCount
from disambig.programs.baselines.dtv_pseudo import DtVPseudo
from disambig.programs.baselines.iterative_rag import IterativeRAG
from disambig.programs.baselines.per_reading_rag import PerReadingRAG
from disambig.programs.baselines.rac_top20 import RACTop20
from disambig.programs.baselines.vanilla_rag import VanillaRAG

__all__ = ["ClosedBook", "DtVPseudo", "IterativeRAG", "LLMOnlyCount", "MapCount", "NaiveRAGCount", "PerReadingRAG",
           "RACTop20", "VanillaRAG"]
