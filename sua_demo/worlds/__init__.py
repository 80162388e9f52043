"""Building worlds: `build` (a world's shipped models, noises and reports, `sua build-all`), `faithful` (the
faithful world built the way LLaVA is), `first` (more bench seeds of the first world, `sua build-worlds`) and
`scale` (faithful worlds at other tower sizes)."""
