"""Benchmarks of disambig, grouped by what they measure (quality, cost, reliability, scale); run each as
``python -m bench.GROUP.NAME`` from the checkout. ``bench/README.md`` lists the command behind every table in docs/."""
