"""multipart/form-data bodies (RFC 7578), read as a stream.

What PHP does before a page runs: form fields into ``$_POST``, file parts
into temporary files (``$_FILES``).  The parsing is the ``multipart``
package's (the maintained parser behind Bottle; its push parser never holds
more than a chunk); this module feeds it the body in chunks, keeps fields in
memory up to a limit and writes file parts straight to temporary files in a
directory the caller names, so a large upload never sits in memory.  A body
cut short, a part without a name or over a limit raises
:class:`MultipartError` and leaves no temporary file behind.
"""

import os
import tempfile

from multipart import MultipartError as _ParserError
from multipart import PushMultipartParser, parse_options_header

from boincpy.errors import BoincpyError
from boincpy.record import Record

CHUNK = 1 << 16
MAX_HEADER_BYTES = 16384


class MultipartError(BoincpyError, ValueError):
    """The body is not a well-formed multipart/form-data body (or is too large)."""


class UploadedFile(Record):
    """One file part: its form field, the file name the client gave, the
    temporary file holding its bytes, and their number."""

    FIELDS = (("field", ""), ("filename", ""), ("path", ""), ("size", 0))


def boundary_of(content_type):
    """The boundary of a multipart/form-data Content-Type, or None."""
    if not content_type:
        return None
    kind, options = parse_options_header(content_type)
    value = options.get("boundary", "")
    if kind != "multipart/form-data" or not value or len(value) > 200:
        return None
    return value.encode("latin-1", "replace")


def _chunks(stream, length):
    """The body: at most ``length`` bytes of ``stream``, in chunks."""
    left = length
    while left > 0:
        data = stream.read(min(CHUNK, left))
        if not data:
            return
        left -= len(data)
        yield data


def parse(stream, length, boundary, tmp_dir, max_field_bytes=1 << 26, max_file_bytes=None,
          max_parts=1000):
    """Read a multipart/form-data body: ({field: text}, [UploadedFile]).

    Fields are decoded as UTF-8; a later field of the same name wins (as
    PHP's $_POST).  Files are written under ``tmp_dir``.  On any error every
    temporary file is removed and MultipartError raised."""
    body = _Body(tmp_dir, max_field_bytes, max_file_bytes)
    parser = PushMultipartParser(boundary, max_header_size=MAX_HEADER_BYTES,
                                 max_header_count=16, max_segment_count=max_parts)
    try:
        try:
            for chunk in _chunks(stream, length):
                if parser.closed:
                    break                               # the epilogue: ignored
                for event in parser.parse(chunk):
                    body.take(event)
        except _ParserError as exc:
            raise MultipartError("malformed multipart body: %s" % exc) from None
        if not parser.closed:
            try:
                for event in parser.parse(b""):         # the end of the input
                    body.take(event)
            except _ParserError:
                raise MultipartError("request body ends %s (truncated upload)" % (
                    "inside field %s" % body.name if body.sink is not None
                    else "before its last boundary")) from None
    except BaseException:
        body.discard()
        raise
    return body.fields, body.files


class _Body:
    """Where the parser's events go: fields in memory, files to disk."""

    def __init__(self, tmp_dir, max_field_bytes, max_file_bytes):
        self.tmp_dir = tmp_dir
        self.limits = (max_field_bytes, max_file_bytes)
        self.fields, self.files = {}, []
        self.sink = self.name = self.limit = None
        self.size = 0

    def take(self, event):
        if event is None:                               # the part ends
            if isinstance(self.sink, bytearray):
                self.fields[self.name] = bytes(self.sink).decode("utf-8", "replace")
            else:
                self.sink.close()
                self.files[-1].size = self.size
            self.sink = None
        elif isinstance(event, bytes):
            self.size += len(event)
            if self.limit is not None and self.size > self.limit:
                raise MultipartError("multipart field %s is larger than %d bytes"
                                     % (self.name, self.limit))
            if isinstance(self.sink, bytearray):
                self.sink += event
            else:
                self.sink.write(event)
        else:                                           # a part begins
            self.name, self.size = event.name, 0
            if not self.name:
                raise MultipartError("a multipart part has no field name")
            if event.filename is None:
                self.sink, self.limit = bytearray(), self.limits[0]
            else:
                fd, path = tempfile.mkstemp(dir=self.tmp_dir, prefix="upload_")
                self.sink, self.limit = os.fdopen(fd, "wb"), self.limits[1]
                self.files.append(UploadedFile(self.name, event.filename, path, 0))

    def discard(self):
        """Close and delete whatever was written (a failed body)."""
        if self.sink is not None and not isinstance(self.sink, bytearray):
            self.sink.close()
        remove(self.files)


def remove(files):
    """Delete the temporary files of ``files`` that are still there."""
    for f in files:
        try:
            os.unlink(f.path)
        except OSError:
            pass
