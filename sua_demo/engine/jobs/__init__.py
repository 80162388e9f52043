"""The engine's doors for the page's whole workflows, split by job: `audit` (the shipped audit, a live one, the
report card) and `face` (*Your face*: a visitor checked, taught, unlearned and attacked). `sua_demo.ui` reaches
the library through these, `engine` and `look`, never below them (an import-linter contract)."""
