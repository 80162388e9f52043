"""The residual-knowledge audit: SUA beside quantization, relearning, soft-prompt, rephrased, text-only,
typographic and rephrased-image probes, each with its control on the retrain model (base.py says why)."""

from sua_demo.audit import asking, noise, quantize, relearn, rephrased_image, soft_prompt, typographic  # noqa: F401  (registration)
from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod
from sua_demo.audit.run import run_audit

__all__ = ["AUDITS", "AuditContext", "AuditMethod", "run_audit"]
