"""What every benchmark repeats, once: a clean worktree at a commit (``worktree``), the load and CPU a measurement
records (``machine``), per-question rows a stopped run resumes from (``rows``), stored run folders read back and scored
(``runs``), the paired-interval cell of a table (``paired``), and a generated table written between its markers in a
docs file (``docs``). ``bench.run`` is the one runner of LM runs."""

from bench.harness.docs import Script
from bench.harness.machine import cpu_name, free_port, load1
from bench.harness.paired import DELTA_NOTE, delta_head, difference_cell
from bench.harness.rows import Rows
from bench.harness.runs import answers_code, params, raw_rows, row_costs, rows_by_id, run_label, score_rows
from bench.harness.worktree import clean_worktree, python_in

__all__ = ["DELTA_NOTE", "Rows", "Script", "answers_code", "clean_worktree", "cpu_name", "delta_head", "free_port",
           "difference_cell", "load1", "params", "python_in", "raw_rows", "row_costs", "rows_by_id", "run_label",
           "score_rows"]
