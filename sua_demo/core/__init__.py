"""The leaves every layer may use: plain values and helpers that load no model (errors, settings, files,
images, registries, precision, the machine, threads, resumable state, the shipped list)."""
