"""Paths in BOINC's fan-out hierarchy, MD5 of files, and atomic writes."""

import hashlib
import os
import tempfile


def bucket(name, fanout):
    """The fan-out bucket of a file name, exactly as every BOINC component computes it.

    MD5 of the name, characters 1..7 of its hex read as a number, modulo the
    fan-out, written in lowercase hex without padding.
    """
    digest = hashlib.md5(name.encode()).hexdigest()
    return format(int(digest[1:8], 16) % fanout, "x")


def dir_hier_path(root, name, fanout, create=False):
    """Path of ``name`` under ``root`` (download_dir or upload_dir); flat when fanout is 0."""
    if not fanout:
        return os.path.join(root, name)
    directory = os.path.join(root, bucket(name, fanout))
    if create:
        os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, name)


def dir_hier_url(base_url, name, fanout):
    """URL of ``name`` under ``base_url`` (download_url), matching dir_hier_path."""
    base_url = base_url.rstrip("/")
    if not fanout:
        return "%s/%s" % (base_url, name)
    return "%s/%s/%s" % (base_url, bucket(name, fanout), name)


def md5_file(path, chunk_size=1 << 20):
    """Return (md5 hex, size in bytes) of the file at ``path``."""
    md5 = hashlib.md5()
    size = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk_size)
            if not block:
                break
            md5.update(block)
            size += len(block)
    return md5.hexdigest(), size


def atomic_write(path, data, mode=0o644):
    """Write ``data`` (bytes or str) to ``path`` so readers never see a partial file."""
    if isinstance(data, str):
        data = data.encode()
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
