"""The web pages: a playground served by ``igym serve`` at ``/web`` and the run viewer of ``igym view``.

Both are static pages of our own (HTML, CSS and plain JavaScript in ``static/``, shipped as package
data) served by Starlette: nothing is fetched from elsewhere at run time, and the pages start as
fast as the server. The playground talks to the server's public HTTP API like any client; the
viewer reads run folders. See docs/web.md.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from starlette.responses import FileResponse

#: Every page forbids loading anything from another origin (no CDN, fonts or scripts from
#: elsewhere); pictures may be data URLs (selective verification's observations carry them).
#: Framing stays allowed: a Hugging Face Space shows its app inside an iframe of another origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'"
)


def static_dir() -> Path:
    """The folder of the pages' files, found through ``importlib.resources`` (works from a wheel)."""
    folder = Path(str(resources.files(__name__).joinpath("static")))
    if not folder.is_dir():
        raise ValueError(f"the web pages' files are missing: {folder} is not a folder (a broken install?)")
    return folder


def page(name: str) -> FileResponse:
    """One HTML page of ``static/``, served with the no-other-origin policy and no caching."""
    return FileResponse(
        static_dir() / name,
        media_type="text/html; charset=utf-8",
        headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY, "Cache-Control": "no-cache"},
    )
