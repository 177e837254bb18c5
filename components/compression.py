"""The page itself compressed, as Gradio compresses its scripts.

Gradio compresses a response by its path's file extension (``.js``, ``.css``, ``.json``...), so ``GET /``,
the page, went out whole: 1.79 MB of HTML holding the UI's config, its translations and the API's
description (the 100 KB training corpus six times among them), against ~0.2 MB for every script the
page then loads. Brotli at Gradio's own settings sends it in ~0.2 MB, for ~10 ms of the server's time
(on its event loop, as Gradio's own compression is).

Given to the app as a middleware (``app.LAUNCH_KWARGS``), it sits inside Gradio's own, which passes a
response already encoded through as it is.
"""
from __future__ import annotations

from gradio.brotli_middleware import BrotliMiddleware
from starlette.middleware import Middleware

# The page (a share link's query string is not part of the path), and what a client may fetch instead of
# reading it from the page: the UI's config and the API's description.
PAGE_PATHS = frozenset({"/", "/config", "/gradio_api/info"})


class PageCompression(BrotliMiddleware):
    """Brotli (gzip for a client without it) for :data:`PAGE_PATHS` only: Gradio's middleware has the rest."""

    def _is_compressible_file_type(self, scope) -> bool:
        path, root = scope.get("path", ""), scope.get("root_path", "")
        if root and path.startswith(root):             # behind a proxy that mounts the app under a prefix
            path = path[len(root):]
        return scope.get("method") in ("GET", "HEAD") and (path.rstrip("/") or "/") in PAGE_PATHS


MIDDLEWARE = [Middleware(PageCompression, quality=4)]
