"""The faithful world's shared parts, built once for every world: a population of other people, a vision tower
pretrained on them (CLIP's objective), and the general stage that aligns a projector and a language model to it."""
