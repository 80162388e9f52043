# The two commands that matter: `make run` (set up + run the app on the embedded default) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run run-first demo test test-fast test-slow lint benchmarks checkpoints noises worlds faithful audits recipes-table clean

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# The embedded default is the faithful world (checkpoints/faithful); the first world (checkpoints/tiny-llava) is
# one name away: SUA_WORLD=first before any command, or this target for the app.
run: install
	HF_HUB_OFFLINE=1 $(PY) app.py

run-first: install
	SUA_WORLD=first HF_HUB_OFFLINE=1 $(PY) app.py

demo: install
	HF_HUB_OFFLINE=1 $(VENV)/bin/sua demo

# Two workers (CI has two cores; each runs one torch thread), each served app's tests on one of them.
test: install
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -n 2 --dist loadgroup

# The inner loop: everything but the browser, the served app and the checkpoint sweep (`make test` runs them too).
test-fast: install
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -m 'not slow and not gpu'

test-slow: install
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -m 'slow and not gpu'

lint: install
	$(VENV)/bin/ruff check app.py sua_demo tests benchmarks studies
	$(VENV)/bin/lint-imports

# Speed figures (they name the CPU they ran on): the attack step against a reference-style loop and the
# chip's matmul peak, then the app's waits.
benchmarks: install
	HF_HUB_OFFLINE=1 $(PY) benchmarks/attack_speed.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/app_latency.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/lifecycle_speed.py

# The two fine-tunes run side by side on one thread each (as the shipped files were built: ~20 min on
# 2 cores, and a thread count is part of what makes float results repeat); the unlearning starts from vanilla.
checkpoints: install
	OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 $(VENV)/bin/sua build-all --only vanilla & v=$$!; \
	OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 $(VENV)/bin/sua build-all --only retrain & r=$$!; \
	wait $$v && wait $$r
	HF_HUB_OFFLINE=1 $(VENV)/bin/sua -v build-all --only $$($(PY) -m sua_demo.core.shipped unlearned)
	HF_HUB_OFFLINE=1 $(VENV)/bin/sua train-dncnn
	HF_HUB_OFFLINE=1 $(VENV)/bin/sua train-ddpm

# Relative paths, so the reports name no machine's folders.
noises: install
	HF_HUB_OFFLINE=1 $(VENV)/bin/sua -v build-noises --models checkpoints/tiny-llava --out checkpoints/noise

# Three more worlds (bench seeds 1, 2 and 3) with the shipped recipes: models and noises under runs/worlds (not shipped),
# their summary beside the shipped world's in checkpoints/noise/worlds.{json,md}. Run after `make noises`.
worlds: install
	HF_HUB_OFFLINE=1 $(VENV)/bin/sua -v build-worlds --seeds 1 2 3 --root runs/worlds --noise checkpoints/noise

# The faithful world (docs/world.md): the shared tower and general model (checkpoints/faithful/general), then the
# default world's models (checkpoints/faithful) and two more worlds (runs/faithful). Stop it any time: the same
# command resumes each step from its last checkpoint and skips finished models.
faithful: install
	HF_HUB_OFFLINE=1 $(VENV)/bin/sua -v build-faithful --seeds 0 1 2

# The recipe's attacker-side validation: run files from `studies/attack_recipes.py --model M --variants ... --out`
# (hours on 2 cores, on world 0's models) in checkpoints/noise/recipes/, and their table.
R := checkpoints/noise/recipes
recipes-table: install
	$(VENV)/bin/python studies/attack_recipes.py --summarise $(R)/idk.json $(R)/idk_eot.json $(R)/idk_eot2.json \
	    $(R)/idk_momentum.json $(R)/idk_block.json $(R)/idk_retain.json $(R)/idk_gate.json $(R)/idk_frame.json \
	    $(R)/grad_diff.json $(R)/grad_diff_momentum.json $(R)/grad_diff_block.json $(R)/grad_diff_retain.json \
	    $(R)/grad_diff_gate.json $(R)/grad_diff_steps1000.json > checkpoints/noise/recipes.md

# The residual-knowledge audit of every shipped unlearned model (after `make noises`: it reads their deltas).
audits: install
	for m in $$($(PY) -m sua_demo.core.shipped unlearned); do \
	  HF_HUB_OFFLINE=1 $(VENV)/bin/sua audit checkpoints/tiny-llava/$$m || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
