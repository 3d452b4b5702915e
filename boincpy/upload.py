"""The data server: BOINC's file_upload_handler protocol.

The client POSTs a short text header, then (for uploads) the raw file bytes::

    <data_server_request>
        <core_client_major_version>7</core_client_major_version> ...
    <file_upload>
    <file_info>
    <name>NAME</name>
    <xml_signature>
    HEXLINES.</xml_signature>
    <max_nbytes>5000000</max_nbytes>
    </file_info>
    <nbytes>N</nbytes>
    <md5_cksum>...</md5_cksum>
    <offset>K</offset>
    <data>
    <N - K raw bytes>

or asks ``<get_file_size>NAME</get_file_size>``.  Replies are
``<data_server_reply>`` with status 0 (ok), 1 (transient: retry) or -1
(permanent), in the C++ handler's words.

Two deliberate differences from the C++ handler, both invisible to the client:

* Bytes of an unfinished upload are kept in ``BUCKET/.NAME.part`` and the file
  appears under its real name only when complete (``rename``), so validators
  and assimilators never see a truncated output; ``get_file_size`` reports the
  partial size, so resumed uploads work as with BOINC.
* A name must be a plain file name (``files.check_file_name``'s rule; BOINC
  allows a sub-path): no upload can leave its bucket, or write another
  upload's ``.NAME.part``.
"""

import errno
import fcntl
import posix     # not os, on a classic CGI's path (boincpy.hot_path.join)

from boincpy.cnum import strtod
from boincpy.errors import BoincpyError
from boincpy.files import dir_hier_path, file_name_fault, log_path
from boincpy.hot_path import cgi_environ, exists, exit_now, join
from boincpy.xml import xml_escape

BLOCK_SIZE = 256 * 1024
MAX_HEADER_BYTES = 64 * 1024
MIN_FREE_BYTES = 1e9
DEFAULT_INITIAL_PERMISSION = 0o664

TRANSIENT, PERMANENT = 1, -1


def _leaf(line):
    """(tag, value) of a line starting ``<tag>value</tag>`` (tag: word
    characters, value: no ``<``), else None.  By hand, not with a regular
    expression: importing re costs the CGI more than parsing the header."""
    end = line.find(b">")
    if not line.startswith(b"<") or end < 2:
        return None
    tag = line[1:end]
    if not tag.replace(b"_", b"a").isalnum():
        return None
    close = line.find(b"<", end + 1)
    if close < 0 or not line.startswith(b"</" + tag + b">", close):
        return None
    return tag, line[end + 1:close]


class UploadError(BoincpyError):
    """An error reply: ``status`` 1 (transient) or -1 (permanent)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def reply_text(status, message=None, extra=None):
    """The CGI output (header + body) of one data_server_reply; ``message``
    (which may quote the client's file name) is escaped, ``extra`` is our XML."""
    body = "Content-type: text/plain\n\n<data_server_reply>\n    <status>%d</status>\n" % status
    if message is not None:
        body += "    <message>%s</message>\n" % xml_escape(message)
    if extra is not None:
        body += "    %s\n" % extra
    return body + "</data_server_reply>\n"


def is_valid_filename(name):
    """BOINC's is_valid_filename, as strict as every other name the project
    takes (``files.file_name_fault``): no path, no ``..``, no hidden file."""
    return file_name_fault(name) is None


class _Limited:
    """Read at most ``remaining`` bytes of a binary stream (CONTENT_LENGTH)."""

    def __init__(self, stream, remaining):
        self.stream = stream
        self.remaining = remaining

    def readline(self, limit):
        if self.remaining is not None:
            limit = min(limit, self.remaining)
        if limit <= 0:
            return b""
        line = self.stream.readline(limit)
        if self.remaining is not None:
            self.remaining -= len(line)
        return line

    def read(self, n):
        if self.remaining is not None:
            n = min(n, self.remaining)
        if n <= 0:
            return b""
        data = self.stream.read(n)
        if self.remaining is not None:
            self.remaining -= len(data)
        return data

    def drain(self):
        while self.read(BLOCK_SIZE):
            pass


def _read_header(inp):
    """Header lines up to and including ``<data>`` (or EOF) -> list of bytes lines."""
    lines, size = [], 0
    while True:
        line = inp.readline(4096)
        if not line:
            return lines
        size += len(line)
        if size > MAX_HEADER_BYTES:
            raise UploadError(PERMANENT, "request header too long")
        lines.append(line)
        if line.strip() == b"<data>":
            return lines


def _number(value, what):
    """A header number as BOINC's parse_double reads it; not finite is refused."""
    x = strtod(value.decode("latin-1"))
    if x is None:
        raise UploadError(PERMANENT, "bad %s: %s" % (what, value[:64].decode("latin-1")))
    return x


def parse_upload_header(lines):
    """Fields of a file_upload header: name, xml_signature, max_nbytes, nbytes,
    offset, md5_cksum, has_data."""
    info = {"name": None, "xml_signature": None, "max_nbytes": None, "nbytes": None,
            "offset": 0.0, "md5_cksum": "", "has_data": False}
    in_sig, sig = False, []
    for raw in lines:
        line = raw.strip()
        if in_sig:
            if b"</xml_signature>" in line:
                head = line.split(b"</xml_signature>")[0]
                if head:
                    sig.append(head)
                in_sig = False
                info["xml_signature"] = b"\n".join(sig).decode("latin-1")
            elif line:
                sig.append(line)
            continue
        if line == b"<data>":
            info["has_data"] = True
            break
        if line.startswith(b"<xml_signature>"):
            rest = line[len(b"<xml_signature>"):]
            if b"</xml_signature>" in rest:
                info["xml_signature"] = rest.split(b"</xml_signature>")[0].strip().decode(
                    "latin-1")
            else:
                in_sig = True
                if rest:
                    sig.append(rest)
            continue
        leaf = _leaf(line)
        if leaf is None:
            continue
        tag, value = leaf[0].decode(), leaf[1]
        if tag == "name":
            info["name"] = value.decode("utf-8", "replace")
        elif tag in ("max_nbytes", "nbytes", "offset"):
            info[tag] = _number(value, tag)
        elif tag == "md5_cksum":
            info["md5_cksum"] = value.decode("latin-1")
    return info


def _free_bytes(path):
    st = posix.statvfs(path)
    return st.f_bavail * st.f_frsize


def _size(path):
    """The size of the file at ``path``, None if there is none to stat."""
    try:
        return posix.stat(path).st_size
    except (OSError, ValueError):
        return None


def _part_path(path):
    cut = path.rfind("/") + 1           # NAME in its directory: .NAME.part
    return path[:cut] + "." + path[cut:] + ".part"


def get_file_size(cfg, name, log):
    """Reply extra for a size query: the bytes the server holds of ``name``."""
    if not is_valid_filename(name):
        raise UploadError(PERMANENT, "Bad filename")
    path = dir_hier_path(cfg.upload_dir, name, cfg.uldl_dir_fanout)
    if _free_bytes(cfg.upload_dir) < MIN_FREE_BYTES:
        raise UploadError(TRANSIENT, "Server is out of disk space")
    for candidate in (path, _part_path(path)):
        try:
            size = posix.stat(candidate).st_size
        except FileNotFoundError:
            continue
        except OSError:
            raise UploadError(TRANSIENT, "can't open file") from None
        log.normal("get_file_size: %s has %d bytes" % (name, size))
        return "<file_size>%d</file_size>" % size
    log.normal("get_file_size: %s not found" % name)
    return "<file_size>0</file_size>"


def check_certificate(cfg, info, public_key):
    """Raise UploadError unless the upload certificate signs (name, max_nbytes)."""
    if cfg.ignore_upload_certificates:
        return
    if not info["xml_signature"]:
        raise UploadError(PERMANENT, "missing signature")
    if info["max_nbytes"] is None:
        raise UploadError(PERMANENT, "missing max_nbytes")
    from boincpy import crypto
    signed = "<name>%s</name><max_nbytes>%.0f</max_nbytes>" % (info["name"],
                                                              info["max_nbytes"])
    try:
        ok = crypto.verify_string(signed, info["xml_signature"] + "\n", public_key)
    except Exception:
        ok = False
    if not ok:
        raise UploadError(PERMANENT, "invalid signature")


def _still_named(fd, path):
    """True if ``path`` is the file open as ``fd`` (not renamed or replaced since)."""
    try:
        st = posix.stat(path)
    except FileNotFoundError:
        return False
    own = posix.fstat(fd)
    return (st.st_ino, st.st_dev) == (own.st_ino, own.st_dev)


def receive_file(cfg, info, inp, log):
    """Write the upload's bytes; the file appears under its name when complete."""
    name = info["name"]
    nbytes, offset = info["nbytes"], info["offset"]
    path = dir_hier_path(cfg.upload_dir, name, cfg.uldl_dir_fanout, create=True)
    mode = cfg.fuh_set_initial_permission
    if mode is None:
        mode = DEFAULT_INITIAL_PERMISSION
    mode &= ~0o111
    have = _size(path)
    if have is not None and have >= nbytes:
        inp.drain()
        log.normal("%s is already complete (%d bytes)" % (name, have))
        return
    part = _part_path(path)
    if nbytes == 0:
        posix.close(posix.open(path, posix.O_WRONLY | posix.O_CREAT, mode))
        return
    if offset >= nbytes:
        # the client believes we have it all (BOINC answers 0 without reading)
        have = _size(part)
        if have is not None and have >= nbytes:
            posix.rename(part, path)
        return
    created = False         # our own empty .part: removed if the upload is refused
    try:
        try:
            fd = posix.open(part, posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL, mode)
            created = True
        except FileExistsError:
            fd = posix.open(part, posix.O_WRONLY)
    except OSError as exc:
        raise UploadError(TRANSIENT, "can't open file %s: %s" % (name, exc.strerror)) from None
    locked = False
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UploadError(TRANSIENT, "can't lock file %s" % name) from None
        locked = True
        if not _still_named(fd, part):
            # another handler completed the upload (renamed the .part) between our
            # open and our lock: that file is NAME now and must not be touched
            raise UploadError(TRANSIENT, "%s was completed by another upload meanwhile"
                              % name)
        posix.fchmod(fd, mode)
        have = posix.fstat(fd).st_size
        if have < offset:
            raise UploadError(TRANSIENT, "length of file %s %d bytes < offset %.0f bytes"
                              % (name, have, offset))
        posix.ftruncate(fd, int(offset))
        posix.lseek(fd, int(offset), 0)            # SEEK_SET
        want = int(nbytes - offset)
        got = 0
        while got < want:
            block = inp.read(min(BLOCK_SIZE, want - got))
            if not block:
                raise UploadError(TRANSIENT, "EOF on socket read : asked for %.0f, got %d\n"
                                  % (nbytes, int(offset) + got))
            try:
                posix.write(fd, block)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    raise UploadError(TRANSIENT, "No space left on server") from None
                raise UploadError(TRANSIENT, "can't write file %s: %s"
                                  % (name, exc.strerror)) from None
            got += len(block)
        posix.fsync(fd)
        if cfg.fuh_set_completed_permission is not None:
            posix.fchmod(fd, cfg.fuh_set_completed_permission)
        posix.rename(part, path)
        log.normal("Uploaded %s (%.0f bytes, offset %.0f) to %s" % (name, nbytes, offset, path))
    except BaseException:
        # A refused upload leaves nothing behind: the .part this request made
        # goes if it is still empty and still ours (bytes received before an
        # error stay, for the client to resume, as BOINC keeps them).
        if created and locked and _still_named(fd, part) and posix.fstat(fd).st_size == 0:
            posix.unlink(part)
        raise
    finally:
        posix.close(fd)


def handle_request(cfg, stream, content_length, log, public_key=None, environ=None,
                   resident=None):
    """Serve one data-server request; return the CGI output text.

    ``public_key``: the upload key when the caller has it, else read from
    ``resident`` (kept until the key file changes) or from KEY_DIR."""
    environ = cgi_environ() if environ is None else environ
    inp = _Limited(stream, content_length)
    try:
        if exists(cfg.project_path("stop_upload")):
            raise UploadError(TRANSIENT, "File uploads are temporarily disabled.")
        if not posix.access(cfg.upload_dir, posix.W_OK):
            raise UploadError(TRANSIENT, "upload directory is not writable")
        lines = _read_header(inp)
        for line in lines:
            s = line.strip()
            if s == b"<file_upload>":
                info = parse_upload_header(lines)
                if not info["name"]:
                    raise UploadError(PERMANENT, "Missing name")
                if not info["has_data"]:
                    raise UploadError(PERMANENT, "Missing <data> tag")
                if not cfg.ignore_upload_certificates and public_key is None:
                    public_key = load_upload_key(cfg, resident)
                check_certificate(cfg, info, public_key)
                if info["nbytes"] is None or info["nbytes"] < 0:
                    raise UploadError(PERMANENT, "nbytes missing or negative")
                if (not cfg.ignore_upload_certificates
                        and info["nbytes"] > info["max_nbytes"]):
                    inp.drain()
                    raise UploadError(PERMANENT, "file size (%d KB) exceeds limit (%d KB)"
                                      % (info["nbytes"] // 1024, info["max_nbytes"] // 1024))
                if not is_valid_filename(info["name"]):
                    raise UploadError(PERMANENT, "file_upload_handler: invalid filename: %s"
                                      % info["name"])
                if info["offset"] < 0:
                    raise UploadError(PERMANENT, "negative offset")
                receive_file(cfg, info, inp, log)
                return reply_text(0)
            if s.startswith(b"<get_file_size>"):
                leaf = _leaf(s)
                name = leaf[1].decode("utf-8", "replace") if leaf else ""
                return reply_text(0, extra=get_file_size(cfg, name, log))
        log.normal("handle_request: no command")
        raise UploadError(TRANSIENT, "no command")
    except UploadError as exc:
        log.normal("Returning error to client %s: %s (%s)" % (
            environ.get("REMOTE_ADDR", "Unknown remote address"), exc.message.rstrip(),
            "transient" if exc.status == TRANSIENT else "permanent"))
        return reply_text(exc.status, exc.message)
    except Exception as exc:
        # never a traceback page: the client gets a reply it can act on (retry)
        from boincpy.log import failure_text
        log.critical(failure_text(exc, "upload failed"))
        return reply_text(TRANSIENT, "server error")


def load_upload_key(cfg, resident=None):
    """The project's upload_public key (transient error if unreadable)."""
    from boincpy import crypto
    path = join(cfg.key_dir, "upload_public")
    try:
        key = crypto.read_key(path) if resident is None else resident.key(cfg, "upload_public")
        if key is None:
            raise OSError("%s: no such file" % path)
        return key
    except Exception as exc:
        raise UploadError(TRANSIENT, "can't read upload key: %s" % exc) from None


def serve(environ, stream, resident, errors=None):
    """One data-server request as a plain function: the CGI environment and
    the body's stream in, the CGI output (bytes) out.  ``resident`` keeps the
    configuration and the upload key (:mod:`boincpy.resident`); ``errors``
    (the web server's error log) gets what can't go to the log file."""
    from boincpy.log import MessageLog
    resident.requests += 1
    try:
        cfg = resident.config()
    except Exception as exc:
        return reply_text(TRANSIENT, "can't parse config file: %s" % exc).encode()
    try:
        log = MessageLog.open(log_path(cfg, "file_upload_handler.log"),
                              cfg.fuh_debug_level, show_pid=True)
        opened = True
    except OSError:
        log = MessageLog(errors, cfg.fuh_debug_level, show_pid=True)
        opened = False
    length = environ.get("CONTENT_LENGTH")
    try:
        length = int(length) if length else None
    except ValueError:
        length = None
    try:
        out = handle_request(cfg, stream, length, log, environ=environ, resident=resident)
    finally:
        if opened:
            log.stream.close()
    return out.encode("utf-8", "replace")


def cgi_main():
    """Entry point of cgi-bin/file_upload_handler."""
    import sys
    from boincpy.resident import Resident
    resident = Resident()
    try:
        out = serve(cgi_environ(), sys.stdin.buffer, resident, sys.stderr)
    finally:
        resident.close()
    sys.stdout.buffer.write(out)
    exit_now()
