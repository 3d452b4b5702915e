"""Input files by content (Condor-B): stored once, shared by every batch.

A submitter names each input file by its content (``jf_<md5>``, or the
GAHP's ``<md5>.<ext>``), asks which names the server lacks (query_files) and
uploads only those (upload_files).  Each file is a ``job_file`` row with a
lease (delete_time), and ``batch_file_assoc`` records every batch that uses
it.  :func:`delete_unused` (bin/delete_job_files) deletes a file once its
lease has passed and no live batch (new, in progress or complete) holds it;
the file deleter leaves such shared files alone, whatever a workunit's
template says.

Stricter than BOINC's job_file.php: a name must be a plain file name
(no path, no leading dot), a name that carries an MD5 must match its bytes,
and a batch named in the request must exist and be the user's (or one they
may manage).
"""

import errno
import hashlib
import os
import re
import shutil
import time

from boincpy.db.rows import JobFile
from boincpy.db.submit import (associate_job_file, associate_job_files_named, delete_job_file,
                               delete_job_file_named, insert_job_file, set_job_file_delete_time)
from boincpy.errors import SubmitError
from boincpy.files import (check_download_file, dir_hier_path, file_name_fault, job_file_name,
                           md5_file, write_md5_file)
from boincpy.submit import batch as batches

MAX_NAME = 191          # job_file.name is varchar(191)
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
# a content name: jf_<md5>, <md5>, optionally followed by .ext
_MD5_NAME_RE = re.compile(r"^(?:jf_)?([0-9a-f]{32})(?:\.[A-Za-z0-9_\-.]*)?$")


def valid_name(name):
    """A physical file name a submitter may use: a file name
    (``files.file_name_fault``: no path, no ``..``, no leading dot), and of
    letters, digits, ``_ . -`` only (it goes into URLs as it is), at most 191
    bytes (job_file.name)."""
    return file_name_fault(name) is None and len(name.encode()) <= MAX_NAME \
        and bool(_NAME_RE.match(name))


def md5_of_name(name):
    """The MD5 a content name carries (jf_<md5>[.ext] or <md5>[.ext]), or None."""
    m = _MD5_NAME_RE.match(name)
    return m.group(1) if m else None


def path_of(cfg, name, create=False):
    """Where a job file lives in the download hierarchy."""
    return dir_hier_path(cfg.download_dir, name, cfg.uldl_dir_fanout, create=create)


def lookup(db, name):
    """The job_file row of this name, or None."""
    return JobFile.from_row(db.query_one("SELECT * FROM job_file WHERE name = %s", (name,)))


def check_batch(db, user_id, batch_id, may_control):
    """The batch a file request names must exist and be the user's (or
    ``may_control(batch)``); 0 means none."""
    if not batch_id:
        return
    b = batches.lookup(db, batch_id)
    if b is None:
        raise SubmitError("no batch %d" % batch_id)
    if b.user_id != user_id and not may_control(b):
        raise SubmitError("not owner of batch")


def _record(db, name, delete_time, batch_id, now):
    """The file's job_file row (made if missing, lease never shortened) and
    its batch association; returns the job_file id."""
    jf = lookup(db, name)
    if jf is None:
        jf_id = insert_job_file(db, name, now, delete_time)
    else:
        jf_id = jf.id
        if jf.delete_time < delete_time:
            set_job_file_delete_time(db, jf_id, delete_time)
    if batch_id:
        associate_job_file(db, jf_id, batch_id)
    return jf_id


def query(db, cfg, names, batch_id=0, delete_time=0.0, now=None):
    """query_files: the indices of ``names`` the server lacks.  For each file
    present: its job_file row (made if missing), its lease raised to
    ``delete_time``, its association with the batch.  A row whose file has
    gone is dropped."""
    now = now or time.time()
    for name in names:
        if not valid_name(name):
            raise SubmitError("bad filename")
    absent = []
    with db.transaction():
        for i, name in enumerate(names):
            if os.path.isfile(path_of(cfg, name)):
                _record(db, name, delete_time, batch_id, now)
            else:
                delete_job_file_named(db, name)
                absent.append(i)
    return absent


def store(db, cfg, uploads, batch_id=0, delete_time=0.0, now=None):
    """upload_files: ``uploads`` is [(name, path of the uploaded bytes)].

    Every file is checked before any is kept: a name that is not a plain file
    name ("bad filename"), bytes that do not match the MD5 the name carries,
    or a different file already stored under the name ("file immutability
    violation for NAME") refuse the whole request.  Then each new file is
    moved into the download hierarchy (with NAME.md5) and all are recorded
    in one transaction.  Uploaded files not moved are the caller's to remove."""
    now = now or time.time()
    checked = []
    for name, tmp_path in uploads:
        if not valid_name(name):
            raise SubmitError("bad filename")
        path = path_of(cfg, name, create=True)
        try:
            status, md5, size = check_download_file(tmp_path, path)
        except OSError as exc:
            raise SubmitError("can't read uploaded file %s: %s" % (name, exc.strerror)) from None
        if status < 0:
            raise SubmitError("file immutability violation for %s" % name)
        expected = md5_of_name(name)
        if expected is not None and expected != md5:
            raise SubmitError("file %s: its content does not match the MD5 in its name "
                              "(its MD5 is %s)" % (name, md5))
        checked.append((name, tmp_path, path, status, md5, size))
    for name, tmp_path, path, status, md5, size in checked:
        if status == 1:
            _place(name, tmp_path, path, md5, size)
    with db.transaction():
        for name, *_ in checked:
            _record(db, name, delete_time, batch_id, now)


def _place(name, tmp_path, path, md5, size):
    """Put a new file in place without ever replacing one: a hard link fails
    if another request stored the name meanwhile (then it must be the same
    bytes)."""
    try:
        os.chmod(tmp_path, 0o644)
        try:
            os.link(tmp_path, path)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            # the spool is on another file system: copy next to the target first
            near = "%s.tmp_%d" % (path, os.getpid())
            shutil.copyfile(tmp_path, near)
            os.chmod(near, 0o644)
            try:
                os.link(near, path)
            finally:
                os.unlink(near)
        write_md5_file(path, md5, size)
    except FileExistsError:
        if md5_file(path)[0] != md5:
            raise SubmitError("file immutability violation for %s" % name) from None
    except OSError as exc:
        raise SubmitError("file operation failed; check permissions in download/* (%s)"
                          % exc.strerror) from None


def store_bytes(db, cfg, data, batch_id=0, delete_time=0.0, now=None):
    """Store content given in the request itself (inline input files): named
    jf_<md5>, written once; returns the name."""
    now = now or time.time()
    md5 = hashlib.md5(data).hexdigest()
    name = job_file_name(md5)
    path = path_of(cfg, name, create=True)
    if not os.path.exists(path):
        tmp = "%s.tmp_%d" % (path, os.getpid())
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            _place(name, tmp, path, md5, len(data))
        except OSError as exc:
            raise SubmitError("can't write an inline input file: %s" % exc.strerror) from None
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    with db.transaction():
        _record(db, name, delete_time, batch_id, now)
    return name


def associate(db, names, batch_id):
    """Record that a batch uses these job files (those that are job files)."""
    if not names or not batch_id:
        return
    associate_job_files_named(db, sorted(set(names)), batch_id)


def managed_names(db, names):
    """Which of these file names are job files (their deletion is this module's)."""
    names = list(names)
    found = set()
    for k in range(0, len(names), 500):
        chunk = names[k:k + 500]
        marks = ", ".join(["%s"] * len(chunk))
        found.update(r["name"] for r in db.query(
            "SELECT name FROM job_file WHERE name IN (%s)" % marks, chunk))
    return found


def delete_unused(db, cfg, now=None, grace=86400, log=None, dry_run=False):
    """Delete the job files whose lease has passed (or, without a lease, made
    more than ``grace`` seconds ago) and that no live batch holds; return the
    names deleted.  Each file goes before its row, so a kill leaves at worst
    a row whose file is gone, which query_files repairs."""
    now = now or time.time()
    marks = ", ".join(["%s"] * len(batches.LIVE_STATES))
    rows = db.query(
        "SELECT job_file.* FROM job_file WHERE ((delete_time > 0 AND delete_time < %%s) "
        "OR (delete_time = 0 AND create_time < %%s)) AND NOT EXISTS (SELECT 1 FROM "
        "batch_file_assoc JOIN batch ON batch.id = batch_file_assoc.batch_id WHERE "
        "batch_file_assoc.job_file_id = job_file.id AND batch.state IN (%s)) ORDER BY id"
        % marks, [now, now - grace] + list(batches.LIVE_STATES))
    deleted = []
    for r in rows:
        name = r["name"]
        path = path_of(cfg, name)
        if not dry_run:
            for p in (path, path + ".md5", path + ".gz"):
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    if log:
                        log.critical("can't delete %s: %s" % (p, exc.strerror))
                    break
            else:
                with db.transaction():
                    delete_job_file(db, r["id"])
                deleted.append(name)
                if log:
                    log.normal("deleted %s" % path)
                continue
        else:
            deleted.append(name)
    return deleted

