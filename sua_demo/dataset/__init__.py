"""Benchmarks: the synthetic fictitious-people bench and the MLLMU-Bench parquet loader."""

from sua_demo.dataset.records import Bench, Person, QAItem
from sua_demo.dataset.synthetic import build_bench

__all__ = ["Bench", "Person", "QAItem", "build_bench"]
