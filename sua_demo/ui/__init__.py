"""Presentation for the app, tested without Gradio: the story table, verdicts, noise sources, exports, stops."""
