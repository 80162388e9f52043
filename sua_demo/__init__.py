"""SUA Lab: audit whether an unlearned multimodal LLM really forgot, with a stealthy universal noise attack."""

__version__ = "0.1.0"
