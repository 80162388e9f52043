"""The residual-knowledge audit: SUA beside quantization, relearning, soft-prompt, rephrased and text-only
probes, each with its control on the retrain model (base.py says why)."""

from sua_demo.audit import asking, noise, quantize, relearn, soft_prompt  # noqa: F401  (registration)
from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod
from sua_demo.audit.run import run_audit

__all__ = ["AUDITS", "AuditContext", "AuditMethod", "run_audit"]
