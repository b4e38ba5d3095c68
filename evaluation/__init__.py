"""Evaluation harness: run a program over a dataset split, score it, report and track the run."""
