"""Physical file names, paths in BOINC's fan-out hierarchy, MD5 of files, and
atomic writes.

Every physical file name that comes from outside (templates, create_work's
arguments, submitters' requests, uploads, a row's XML) passes
:func:`check_file_name` before it touches the disk, and :func:`dir_hier_path`
refuses, whatever its caller checked, a name that would leave its root.
"""

import posix     # not os, on a classic CGI's path (boincpy.hot_path.join)

from boincpy.errors import BoincpyError, FileNameError
from boincpy.hot_path import exists, is_dir, join

# Light on purpose: the scheduler and upload handler CGIs import this module on
# every request, so tempfile (shutil, random, ...) is imported where it is used
# and MD5 is CPython's own, not hashlib's (which loads OpenSSL, ~3 ms).
try:
    from _md5 import md5                # CPython's own MD5
except ImportError:                     # an interpreter built without it
    from hashlib import md5


def md5_hex(text):
    """Lower-case hex MD5 of a str (UTF-8) or bytes: BOINC's md5 of e-mail
    addresses (email_hash, cross_project_id) and of passwords and keys."""
    if isinstance(text, str):
        text = text.encode("utf-8")
    return md5(text).hexdigest()


MAX_FILE_NAME_BYTES = 255     # NAME_MAX of the file systems a project lives on

# Characters that would change the XML a name is written into: create_work
# and the scheduler write names into <name> elements as they are, as BOINC does.
_XML_SPECIAL = "<>&"


def file_name_fault(name):
    """Why ``name`` can't be a physical file name, or None if it can.

    A physical name is one plain file inside one bucket: not empty, no ``/``
    or ``\\``, no ``..`` anywhere, not starting with ``.`` (no hidden files:
    ``.htaccess``, the upload handler's ``.NAME.part``), no NUL or other control
    character, none of ``< > &``, valid UTF-8 of at most 255 bytes.
    """
    if not isinstance(name, str):
        return "not a string"
    if not name:
        return "empty"
    for sep in ("/", "\\"):
        if sep in name:
            return "contains '%s'" % sep
    if ".." in name:
        return "contains '..'"
    if name[0] == ".":
        return "starts with '.'"
    if not name.isprintable():        # fast path: most names are printable
        for c in name:
            if c < " " or "\x7f" <= c <= "\x9f":
                return "contains control character %s" % ascii(c)
    for c in _XML_SPECIAL:
        if c in name:
            return "contains '%s'" % c
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "not valid UTF-8"
    if size > MAX_FILE_NAME_BYTES:
        return "%d bytes long (at most %d)" % (size, MAX_FILE_NAME_BYTES)
    return None


def _shown(name):
    """A refused name as a message quotes it: control characters escaped, cut."""
    if not isinstance(name, str):
        return repr(name)
    text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in name)
    return text if len(text) <= 120 else text[:117] + "..."


def check_file_name(name, field="file name"):
    """``name`` if it may be a physical file name (see :func:`file_name_fault`);
    else FileNameError naming ``field`` and the fault, as in
    ``input_template: file_info physical_name '../x': contains '/'``."""
    fault = file_name_fault(name)
    if fault is not None:
        raise FileNameError("%s '%s': %s" % (field, _shown(name), fault))
    return name


def _check_inside(root, name):
    """Defence in depth for dir_hier_path: ``name`` must be one component of
    a path below ``root`` (not a path itself, not ``.`` or ``..``)."""
    if (not isinstance(name, str) or not name or "/" in name or "\0" in name
            or name in (".", "..")):
        raise FileNameError("file name '%s' would resolve outside %s" % (_shown(name), root))


def bucket(name, fanout):
    """The fan-out bucket of a file name, exactly as every BOINC component computes it.

    MD5 of the name, characters 1..7 of its hex read as a number, modulo the
    fan-out, written in lowercase hex without padding.
    """
    digest = md5(name.encode()).hexdigest()
    return format(int(digest[1:8], 16) % fanout, "x")


def dir_hier_path(root, name, fanout, create=False):
    """Path of ``name`` under ``root`` (download_dir or upload_dir); flat when fanout is 0.

    FileNameError for a name that would resolve outside ``root``, whatever
    the caller checked (callers check names with :func:`check_file_name`)."""
    _check_inside(root, name)
    if not fanout:
        return join(root, name)
    directory = join(root, bucket(name, fanout))
    if create and not is_dir(directory):
        try:
            posix.mkdir(directory)          # mode 0o777 less the umask, as makedirs
        except FileExistsError:             # made meanwhile by another process
            pass
        except FileNotFoundError:           # no root either
            import os
            os.makedirs(directory, exist_ok=True)
    return join(directory, name)


def dir_hier_url(base_url, name, fanout):
    """URL of ``name`` under ``base_url`` (download_url), matching dir_hier_path."""
    base_url = base_url.rstrip("/")
    if not fanout:
        return "%s/%s" % (base_url, name)
    return "%s/%s/%s" % (base_url, bucket(name, fanout), name)


def job_file_name(md5):
    """The physical name BOINC gives a file by its content (an uploaded or
    inline input file of remote submission, a remote input file): jf_<md5>."""
    return "jf_" + md5


def log_path(cfg, filename):
    """PROJECT/log_<this host>/filename, the directory made if missing: where
    BOINC's scheduler and upload handler put their logs (get_log_path),
    whatever <log_dir> says."""
    make_host_log_dir(cfg)
    return join(cfg.host_log_dir, filename)


def make_host_log_dir(cfg):
    """Make PROJECT/log_<this host> if missing, so that both the project's
    user (daemons) and the web server's (CGIs) can write there, whichever
    makes it first: with the mode and group of the main log directory
    (make_project's: the web server's group, setgid), else sticky and
    group-writable as BOINC's get_log_path() makes it."""
    directory = cfg.host_log_dir
    if is_dir(directory):
        return directory
    mode, gid = 0o1770, -1
    if cfg.log_dir != directory:
        try:
            st = posix.stat(cfg.log_dir)
            mode, gid = st.st_mode & 0o7777, st.st_gid
        except OSError:
            pass
    old = posix.umask(0)
    try:
        posix.mkdir(directory, mode)
    except FileExistsError:
        return directory
    finally:
        posix.umask(old)
    try:
        posix.chown(directory, -1, gid)
        posix.chmod(directory, mode)      # setgid may be dropped by the chown
    except OSError:
        pass
    return directory


def md5_file(path, chunk_size=1 << 20):
    """Return (md5 hex, size in bytes) of the file at ``path``."""
    digest = md5()
    size = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk_size)
            if not block:
                break
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def atomic_write(path, data, mode=0o644):
    """Write ``data`` (bytes or str) to ``path`` so readers never see a partial file."""
    if isinstance(data, str):
        data = data.encode()
    import os
    import tempfile
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp_")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def read_md5_file(path):
    """(md5, size) from a ``NAME.md5`` file ("<md5> <size>"), as PHP's
    check_download_file reads it; size is None when missing or unreadable."""
    try:
        with open(path) as f:
            parts = f.read().split(" ")
    except OSError as exc:
        raise BoincpyError("can't read %s: %s" % (path, exc.strerror)) from None
    md5 = parts[0].strip()
    try:
        size = float(parts[1]) if len(parts) > 1 else None
    except ValueError:
        size = None
    return md5, size


def write_md5_file(dl_path, md5, size):
    """Write ``dl_path.md5`` ("<md5> <size>\\n"), after the data file so its
    mtime is not older (create_work ignores .md5 files older than their file)."""
    with open(dl_path + ".md5", "w") as f:
        f.write("%s %d\n" % (md5, size))


def check_download_file(path, dl_path):
    """Compare a file with what is staged under ``dl_path`` (PHP's check_download_file).

    Returns (status, md5, size) of ``path``: 0 the same file is already
    staged; 1 nothing is there, it must be copied; -1 a different file with
    that name is there.  In cases 0 and 1 the .md5 file exists afterwards.
    """
    md5, size = md5_file(path)
    md5_path = dl_path + ".md5"
    have_md5 = exists(md5_path)
    if have_md5:
        dl_md5, dl_size = read_md5_file(md5_path)
    if exists(dl_path):
        if have_md5:
            if posix.stat(dl_path).st_size == dl_size and dl_md5 == md5:
                return 0, md5, size
            return -1, md5, size
        m, _ = md5_file(dl_path)
        if m == md5:
            write_md5_file(dl_path, md5, size)
            return 0, md5, size
        return -1, md5, size
    return 1, md5, size
