"""Teaching models: `finetune` (`sua finetune`, the bench taught to a tiny LLaVA) and `pretrain` (the faithful
world's shared tower and general stage)."""
