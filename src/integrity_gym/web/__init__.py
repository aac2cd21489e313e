"""The web pages: a playground served by ``igym serve`` at ``/web`` and the run viewer of ``igym view``.

Both are static pages of our own (HTML, CSS and plain JavaScript in ``static/``, shipped as package
data) served by Starlette: nothing is fetched from elsewhere at run time, and the pages start as
fast as the server. The playground talks to the server's public HTTP API like any client; the
viewer reads run folders. See docs/web.md.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, Router
from starlette.staticfiles import StaticFiles

from integrity_gym.core.registry import env_class

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


async def _view(request: Request) -> Response:
    env = request.path_params["env"]
    try:
        cls = env_class(env)
    except KeyError:
        return PlainTextResponse(f"no environment {env!r}", status_code=404)
    if cls.extras.view is None:
        return PlainTextResponse(f"environment {env!r} declares no page view", status_code=404)
    folder = resources.files(cls.__module__.rpartition(".")[0])
    return FileResponse(str(folder.joinpath(cls.extras.view)), media_type="text/javascript; charset=utf-8")


def static_files() -> Router:
    """The pages' files under ``static/``, and each environment's page view at ``static/views/<env>.js``.

    A view lives in its environment's folder (``EnvExtras.view``); render.js loads it on first use.
    """
    return Router(routes=[Route("/views/{env}.js", _view), Mount("/", app=StaticFiles(directory=static_dir()))])
