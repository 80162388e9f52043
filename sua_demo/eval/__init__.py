"""Evaluation: answer metrics and the forget/retain report."""
