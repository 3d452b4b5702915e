"""multipart/form-data bodies (RFC 7578), read as a stream.

What PHP does before a page runs: form fields into ``$_POST``, file parts
into temporary files (``$_FILES``).  Here fields are kept in memory up to a
limit and file parts go straight to temporary files in a directory the caller
names, so a large upload never sits in memory.  A body cut short, a part
without a name or over a limit raises :class:`MultipartError` and leaves no
temporary file behind.
"""

import os
import re
import tempfile
from dataclasses import dataclass

from boincpy.errors import BoincpyError

CHUNK = 1 << 16
MAX_HEADER_BYTES = 16384


class MultipartError(BoincpyError, ValueError):
    """The body is not a well-formed multipart/form-data body (or is too large)."""


@dataclass
class UploadedFile:
    """One file part: its form field, the file name the client gave, the
    temporary file holding its bytes, and their number."""
    field: str
    filename: str
    path: str
    size: int


_BOUNDARY_RE = re.compile(r'boundary=(?:"([^"]+)"|([^;\s]+))', re.I)
_PARAM_RE = re.compile(r';\s*([A-Za-z0-9_*-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))')


def boundary_of(content_type):
    """The boundary of a multipart/form-data Content-Type, or None."""
    if not content_type or not content_type.lower().startswith("multipart/form-data"):
        return None
    m = _BOUNDARY_RE.search(content_type)
    if not m:
        return None
    value = m.group(1) or m.group(2)
    if not value or len(value) > 200:
        return None
    return value.encode("latin-1", "replace")


def _disposition(headers):
    """(name, filename or None) of a part's Content-Disposition."""
    for line in headers.split(b"\r\n"):
        key, _, value = line.decode("utf-8", "replace").partition(":")
        if key.strip().lower() != "content-disposition":
            continue
        params = {}
        for m in _PARAM_RE.finditer(";" + value.split(";", 1)[-1] if ";" in value else ""):
            quoted, plain = m.group(2), m.group(3)
            params[m.group(1).lower()] = (quoted.replace('\\"', '"') if quoted is not None
                                          else plain.strip())
        return params.get("name"), params.get("filename")
    return None, None


class _Body:
    """The request body, at most ``length`` bytes of ``stream``."""

    def __init__(self, stream, length):
        self.stream = stream
        self.left = length

    def read(self):
        if self.left <= 0:
            return b""
        data = self.stream.read(min(CHUNK, self.left))
        if not data:
            self.left = 0
            return b""
        self.left -= len(data)
        return data


def parse(stream, length, boundary, tmp_dir, max_field_bytes=1 << 26, max_file_bytes=None,
          max_parts=1000):
    """Read a multipart/form-data body: ({field: text}, [UploadedFile]).

    Fields are decoded as UTF-8; a later field of the same name wins (as
    PHP's $_POST).  Files are written under ``tmp_dir``.  On any error every
    temporary file is removed and MultipartError raised."""
    body = _Body(stream, length)
    delim = b"\r\n--" + boundary
    fields, files = {}, []
    buf = b"\r\n"
    try:
        # the preamble, up to the first boundary
        while True:
            i = buf.find(delim)
            if i >= 0:
                buf = buf[i + len(delim):]
                break
            more = body.read()
            if not more:
                raise MultipartError("no multipart boundary in the request body")
            buf = buf[-len(delim):] + more
        nparts = 0
        while True:
            while len(buf) < 2:
                more = body.read()
                if not more:
                    raise MultipartError("request body ends in a boundary line")
                buf += more
            if buf.startswith(b"--"):
                return fields, files            # the closing boundary
            # rest of the boundary line, then the part's headers
            while b"\r\n\r\n" not in buf:
                if len(buf) > MAX_HEADER_BYTES:
                    raise MultipartError("multipart part headers too long")
                more = body.read()
                if not more:
                    raise MultipartError("request body ends in a part's headers")
                buf += more
            line_end = buf.index(b"\r\n")
            head_end = buf.index(b"\r\n\r\n")
            headers = buf[line_end + 2:head_end] if head_end > line_end else b""
            buf = buf[head_end + 4:]
            nparts += 1
            if nparts > max_parts:
                raise MultipartError("too many multipart parts (more than %d)" % max_parts)
            name, filename = _disposition(headers)
            if not name:
                raise MultipartError("a multipart part has no field name")
            if filename is None:
                sink, limit = bytearray(), max_field_bytes
            else:
                fd, path = tempfile.mkstemp(dir=tmp_dir, prefix="upload_")
                sink = os.fdopen(fd, "wb")
                files.append(UploadedFile(name, filename, path, 0))
                limit = max_file_bytes
            size = 0
            # the part's bytes, up to the next delimiter
            while True:
                i = buf.find(delim)
                if i >= 0:
                    chunk, buf = buf[:i], buf[i + len(delim):]
                else:
                    keep = len(delim) - 1
                    chunk, buf = buf[:-keep] if len(buf) > keep else b"", buf[-keep:]
                size += len(chunk)
                if limit is not None and size > limit:
                    raise MultipartError("multipart field %s is larger than %d bytes"
                                         % (name, limit))
                if chunk:
                    if isinstance(sink, bytearray):
                        sink += chunk
                    else:
                        sink.write(chunk)
                if i >= 0:
                    break
                more = body.read()
                if not more:
                    raise MultipartError("request body ends inside field %s (truncated upload)"
                                         % name)
                buf += more
            if isinstance(sink, bytearray):
                fields[name] = bytes(sink).decode("utf-8", "replace")
            else:
                sink.close()
                files[-1].size = size
    except BaseException:
        remove(files)
        raise


def remove(files):
    """Delete the temporary files of ``files`` that are still there."""
    for f in files:
        try:
            os.unlink(f.path)
        except OSError:
            pass
