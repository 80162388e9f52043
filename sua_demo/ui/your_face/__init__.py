"""The *Your face* tab: a visitor's photos, kept in their own browser session's memory and nowhere else, a made-up
person's facts, and one lifecycle run at a time per session, shown step by step (`intake`, `views`, `run`).

Privacy, by construction: a photo is read into memory and its uploaded file deleted at once (only a file uploaded
to this server is ever deleted, never a file the server made, whatever path a caller names), so the server's file
routes hold nothing of it; thumbnails are inline images inside the page; the models taught on it live only while
the run does. The photos and the last report live in `shared.face_sessions`, keyed by the browser session, not in
Gradio's session state: they are dropped when the tab closes (Gradio's unload event, which also drops the page's
copy of the thumbnails) or after `IDLE_SECONDS` without use. Only step timings are logged.
"""

from sua_demo.ui.your_face.layout import build

TITLE = "Your face"
__all__ = ["TITLE", "build"]
