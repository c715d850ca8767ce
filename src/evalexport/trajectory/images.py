"""Images a prompt carries (``images`` relaxed): the media types an ATIF image part holds, and
the URLs it can name (:func:`image_media_type`)."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["IMAGE_DIRECTORY", "IMAGE_MEDIA_TYPES", "image_media_type"]


IMAGE_DIRECTORY: Final = "images"
"""Where a trajectory's image files go, beside it: an image part names ``images/<sha256>.<ext>``
(``images`` relaxed)."""


IMAGE_MEDIA_TYPES: Final = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
}
"""The media types ATIF v1.7's image parts hold, and the file extension of each."""


_DATA_URL: Final = re.compile(r"data:(image/[a-z]+);base64,[A-Za-z0-9+/\s]*={0,2}\s*", re.ASCII)


_IMAGE_URL: Final = re.compile(r"https?://[^\s]+\.(png|jpe?g|gif|webp)(\?[^\s]*)?", re.I | re.ASCII)


def image_media_type(url: str) -> str | None:
    """The media type of an image ``url`` ATIF can hold (a base64 ``data:`` URL of one of
    :data:`IMAGE_MEDIA_TYPES`, or an http(s) URL ending in one's extension), else ``None``."""
    if (data := _DATA_URL.fullmatch(url)) is not None:
        return data.group(1) if data.group(1) in IMAGE_MEDIA_TYPES else None
    if (web := _IMAGE_URL.fullmatch(url)) is not None:
        extension = web.group(1).lower()
        return "image/jpeg" if extension in ("jpg", "jpeg") else f"image/{extension}"
    return None
