"""Output files of remote-submitted jobs: ``get_output.php``, ``get_output2.php``,
``get_output3.php``.

* ``get_output.php`` (BOINC's first API, used by its Python binding and the
  HTCondor GAHP): ``cmd=result_file`` (result_name, file_num,
  auth_str = md5(authenticator + result name)), ``batch_files`` (a zip of
  the canonical outputs, auth_str = md5(authenticator + batch id)),
  ``workunit_file`` (wu_name, file_num, auth_str = the authenticator itself)
  and ``workunit_files`` (a zip, auth_str = md5(authenticator + wu id)).
  Files are sent as ``application/octet-stream`` attachments named by their
  physical names, zips hold them under those names; errors are plain text
  ``ERROR: ...``.
* ``get_output2.php`` (``auth`` = the authenticator, or the login cookie):
  ``cmd=result`` / ``workunit`` (one file as RESULT__LOGICAL, several as
  RESULT.zip of logical names), ``batch`` (batch_ID.zip) and ``file``
  (result_id, file_num).  Errors are plain text (``bad auth``).
* ``get_output3.php``: outputs a batch-collect assimilator put under
  ``PROJECT/results/BATCH/`` (``action=get_file``, ``get_batch_zip``,
  ``get_batch_tar``), for the batch's owner or a manager.

Unlike BOINC's: every command checks that the caller owns the batch (or, for
the authenticator-based ones, manages its app), file numbers are range
checked, and no error names a path on the server.
"""

import hashlib
import os
import re
import tarfile
import tempfile
import zipfile

from boincpy.errors import BoincpyError, FileNameError
from boincpy.files import check_file_name, dir_hier_path
from boincpy.jobfiles import file_infos, output_file_infos
from boincpy.log import failure_text
from boincpy.submit import batch as batches
from boincpy.submit import privileges
from boincpy.web import accounts
from boincpy.web.http import HTML_CONTENT_TYPE, BadRequest, Response, log_error, run_cgi
from boincpy.web.rpc import RpcContext
from boincpy.xml import xml_escape

_BATCH_DIR_ENTRY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-:@+]*$")


class OutputError(BoincpyError):
    """A refusal, sent as plain text."""


def _download(path, name, remove=False):
    """BOINC's do_download: the file as an attachment called ``name``."""
    return Response(
        content_type="application/octet-stream", path=path, remove_path=remove,
        headers=[("Content-Description", "File Transfer"),
                 ("Content-Disposition", "attachment; filename=%s" % name.replace("\n", "")),
                 ("Content-Transfer-Encoding", "binary"), ("Expires", "0"),
                 ("Cache-Control", "must-revalidate, post-check=0, pre-check=0"),
                 ("Pragma", "public")])


def _text(message):
    return Response(message, content_type=HTML_CONTENT_TYPE)


class Outputs:
    """Lookups shared by the three pages."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.db = ctx.db()
        self.cfg = ctx.cfg

    def result_by_name(self, name):
        return self.db.query_one("SELECT * FROM result WHERE name = %s", (name,))

    def result_by_id(self, rid):
        return self.db.query_one("SELECT * FROM result WHERE id = %s", (rid,))

    def workunit(self, wu_id=None, name=None):
        if name is not None:
            return self.db.query_one("SELECT * FROM workunit WHERE name = %s", (name,))
        return self.db.query_one("SELECT * FROM workunit WHERE id = %s", (wu_id,))

    def batch(self, batch_id):
        return batches.lookup(self.db, batch_id=batch_id)

    def owner(self, batch):
        return accounts.lookup_user_by_id(self.db, batch.user_id)

    def phys_names(self, result):
        """A result's output files' physical names (its xml_doc_out <file_info>s)."""
        return [fi.name for fi in file_infos(result["xml_doc_out"]) if fi.name]

    def log_names(self, result):
        """A result's output files' logical names (its xml_doc_in <file_ref>s)."""
        try:
            return [fi.logical_name for fi in output_file_infos(
                result["xml_doc_in"], self.cfg.upload_dir, self.cfg.uldl_dir_fanout)]
        except Exception:
            return []

    def upload_path(self, name):
        """Where an output file is; refused (OutputError) unless ``name`` is a
        file name: xml_doc_out is what a volunteer's client reported."""
        try:
            check_file_name(name, "output file name")
        except FileNameError as exc:
            raise OutputError(exc.message) from None
        return dir_hier_path(self.cfg.upload_dir, name, self.cfg.uldl_dir_fanout)

    def canonical_outputs(self, wu):
        """[(path, result, physical name, logical name)] of a workunit's canonical instance."""
        if not wu["canonical_resultid"]:
            return []
        result = self.result_by_id(wu["canonical_resultid"])
        if result is None:
            return []
        logical = self.log_names(result)
        out = []
        for i, name in enumerate(self.phys_names(result)):
            out.append((self.upload_path(name), result, name,
                        logical[i] if i < len(logical) else name))
        return out

    def zip_file(self, entries):
        """A temporary zip of [(path, name in the zip)] (files that exist), deflated."""
        fd, path = tempfile.mkstemp(dir=self.cfg.tmp_dir if os.path.isdir(self.cfg.tmp_dir)
                                    else None, prefix="boinc_zip_", suffix=".zip")
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            for src, arcname in entries:
                if os.path.isfile(src):
                    z.write(src, arcname)
        return path

    def may_use(self, user, batch):
        """The owner, or a manager of the batch's app."""
        return user is not None and privileges.may_control_batch(self.db, user.id, batch)

    def user_by_auth(self, auth):
        return accounts.lookup_user_by_auth(self.db, auth) if auth else None


def _file_num(request, name="file_num"):
    value = request.get_str(name, optional=True)
    if value is None or not re.match(r"^-?\d+$", value.strip()):
        raise OutputError("missing or bad parameter: %s" % name)
    return int(value)


# ---------------------------------------------------------------------------
# get_output.php

def _job_owner(out, wu):
    batch = out.batch(wu["batch"]) if wu["batch"] else None
    if batch is None:
        raise OutputError("no batch %d" % wu["batch"])
    user = out.owner(batch)
    if user is None:
        raise OutputError("no user %d" % batch.user_id)
    return batch, user


def _md5(text):
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def result_file(out, req):
    name = req.get_str("result_name", optional=True) or ""
    file_num = _file_num(req)
    auth_str = req.get_str("auth_str", optional=True) or ""
    result = out.result_by_name(name)
    if result is None:
        raise OutputError("no job instance %s" % name)
    wu = out.workunit(result["workunitid"])
    if wu is None:
        raise OutputError("no job %d" % result["workunitid"])
    _, user = _job_owner(out, wu)
    if _md5(user.authenticator + result["name"]) != auth_str:
        raise OutputError("bad authenticator")
    names = out.phys_names(result)
    if file_num < 0 or file_num >= len(names):
        raise OutputError("bad file num: %d (the job has %d output files)" % (file_num, len(names)))
    path = out.upload_path(names[file_num])
    if not os.path.isfile(path):
        raise OutputError("no such file %s" % names[file_num])
    return _download(path, names[file_num])


def batch_files(out, req):
    batch_id = req.get_str("batch_id", optional=True)
    auth_str = req.get_str("auth_str", optional=True) or ""
    if batch_id and batch_id.strip().isdigit():
        batch = out.batch(int(batch_id))
        if batch is None:
            raise OutputError("no batch %s" % batch_id)
    else:
        name = req.get_str("batch_name", optional=True) or ""
        batch = batches.lookup(out.db, name=name)
        if batch is None:
            raise OutputError("no batch %s" % name)
    user = out.owner(batch)
    if user is None:
        raise OutputError("no user %d" % batch.user_id)
    if _md5(user.authenticator + str(batch.id)) != auth_str:
        raise OutputError("bad auth str")
    entries = []
    for wu in out.db.query("SELECT id, canonical_resultid FROM workunit WHERE batch = %s "
                           "ORDER BY id", (batch.id,)):
        for path, _, name, _ in out.canonical_outputs(wu):
            entries.append((path, name))
    zip_path = out.zip_file(entries)
    return _download(zip_path, "boinc_batch_%d.zip" % batch.id, remove=True)


def workunit_file(out, req):
    name = req.get_str("wu_name", optional=True) or ""
    file_num = _file_num(req)
    auth_str = req.get_str("auth_str", optional=True) or ""
    wu = out.workunit(name=name)
    if wu is None:
        raise OutputError("no workunit %s" % name)
    _, user = _job_owner(out, wu)
    if user.authenticator != auth_str:
        raise OutputError("bad authenticator")
    if not wu["canonical_resultid"]:
        raise OutputError("no canonical result for wu %s" % wu["name"])
    outputs = out.canonical_outputs(wu)
    if file_num < 0 or file_num >= len(outputs):
        raise OutputError("bad file num: %d (the job has %d output files)"
                          % (file_num, len(outputs)))
    path, _, phys, _ = outputs[file_num]
    if not os.path.isfile(path):
        raise OutputError("no such file: %s" % phys)
    return _download(path, phys)


def workunit_files(out, req):
    wu_id = req.get_str("wu_id", optional=True) or ""
    auth_str = req.get_str("auth_str", optional=True) or ""
    if not wu_id.strip().isdigit():
        raise OutputError("missing or bad parameter: wu_id")
    wu = out.workunit(int(wu_id))
    if wu is None:
        raise OutputError("no workunit %s" % wu_id)
    _, user = _job_owner(out, wu)
    if _md5(user.authenticator + str(wu["id"])) != auth_str:
        raise OutputError("bad authenticator")
    if not wu["canonical_resultid"]:
        raise OutputError("no canonical result for wu %s" % wu["name"])
    zip_path = out.zip_file([(path, name) for path, _, name, _ in out.canonical_outputs(wu)])
    return _download(zip_path, "boinc_wu_%s.zip" % wu["name"], remove=True)


GET_OUTPUT = {"result_file": result_file, "batch_files": batch_files,
              "workunit_file": workunit_file, "workunit_files": workunit_files}


# ---------------------------------------------------------------------------
# get_output2.php

def _auth2(out, req):
    """The caller: login cookie, else the ``auth`` parameter."""
    auth = req.cookie("auth") or req.get_str("auth", optional=True) or ""
    return out.user_by_auth(auth)


def _int(req, name):
    value = req.get_str(name, optional=True)
    if value is None or not value.strip().isdigit():
        raise OutputError("missing or bad parameter: %s" % name)
    return int(value)


def _result_download(out, result, batch, file_num=None):
    """do_result_aux: one file as RESULT__LOGICAL, several as RESULT.zip."""
    phys = out.phys_names(result)
    logical = out.log_names(result)
    logical += phys[len(logical):]
    if file_num is not None:
        if file_num < 0 or file_num >= len(phys):
            raise OutputError("bad file num: %d" % file_num)
        return _download(out.upload_path(phys[file_num]),
                         "%s__%s" % (result["name"], logical[file_num]))
    if len(phys) == 1:
        path = out.upload_path(phys[0])
        if not os.path.isfile(path):
            raise OutputError("no output file for %s" % result["name"])
        return _download(path, "%s__%s" % (result["name"], logical[0]))
    zip_path = out.zip_file([(out.upload_path(p), "%s/%s" % (result["name"], n))
                             for p, n in zip(phys, logical)])
    return _download(zip_path, "%s.zip" % result["name"], remove=True)


def _checked_batch(out, req, wu):
    batch = out.batch(wu["batch"]) if wu["batch"] else None
    if batch is None:
        raise OutputError("no batch for workunit %d" % wu["id"])
    if not out.may_use(_auth2(out, req), batch):
        raise OutputError("bad auth")
    return batch


def do_result(out, req, file_num=None):
    rid = _int(req, "result_id")
    result = out.result_by_id(rid)
    if result is None:
        raise OutputError("no result %d" % rid)
    wu = out.workunit(result["workunitid"])
    if wu is None:
        raise OutputError("no workunit for %d" % rid)
    batch = _checked_batch(out, req, wu)
    return _result_download(out, result, batch, file_num)


def do_file(out, req):
    return do_result(out, req, _file_num(req))


def do_wu(out, req):
    wu_id = _int(req, "wu_id")
    wu = out.workunit(wu_id)
    if wu is None:
        raise OutputError("no workunit %d" % wu_id)
    batch = _checked_batch(out, req, wu)
    result = out.result_by_id(wu["canonical_resultid"]) if wu["canonical_resultid"] else None
    if result is None:
        raise OutputError("no canonical result for workunit %d" % wu_id)
    return _result_download(out, result, batch)


def do_batch(out, req):
    batch_id = _int(req, "batch_id")
    batch = out.batch(batch_id)
    if batch is None:
        raise OutputError("no batch %d" % batch_id)
    if not out.may_use(_auth2(out, req), batch):
        raise OutputError("bad auth")
    entries = []
    for wu in out.db.query("SELECT id, canonical_resultid FROM workunit WHERE batch = %s "
                           "AND canonical_resultid <> 0 ORDER BY id", (batch_id,)):
        outputs = out.canonical_outputs(wu)
        for path, result, _, logical in outputs:
            if len(outputs) == 1:
                entries.append((path, "%s__%s" % (result["name"], logical)))
            else:
                entries.append((path, "%s/%s" % (result["name"], logical)))
    zip_path = out.zip_file(entries)
    return _download(zip_path, "batch_%d.zip" % batch_id, remove=True)


GET_OUTPUT2 = {"result": do_result, "workunit": do_wu, "batch": do_batch, "file": do_file}


# ---------------------------------------------------------------------------
# get_output3.php (the batch-collect paradigm: PROJECT/results/BATCH/)

def _collect_dir(out, batch_id):
    return os.path.join(out.cfg.project_dir, "results", str(int(batch_id)))


def _check3(out, req, batch_id):
    user = _auth2(out, req)
    if user is None:
        raise OutputError("not logged in")
    if privileges.has_manage_access(out.db, user.id, 0):
        return
    batch = out.batch(batch_id)
    if batch is None or batch.user_id != user.id:
        raise OutputError("not owner")


def get_file3(out, req):
    rid = _int(req, "result_id")
    index = _int(req, "index")
    result = out.result_by_id(rid)
    if result is None:
        raise OutputError("no result")
    wu = out.workunit(result["workunitid"])
    if wu is None:
        raise OutputError("no workunit")
    _check3(out, req, wu["batch"])
    logical = out.log_names(result)
    if index >= len(logical):
        raise OutputError("bad index")
    name = "%s__file_%s" % (wu["name"], logical[index])
    if not _BATCH_DIR_ENTRY.match(wu["name"]) or "/" in logical[index]:
        raise OutputError("bad file name")
    path = os.path.join(_collect_dir(out, wu["batch"]), name)
    if not os.path.isfile(path) and os.path.isfile(path + ".gz"):
        path, name = path + ".gz", name + ".gz"
    if not os.path.isfile(path):
        raise OutputError("no such file")
    if req.get_str("download", optional=True):
        return _download(path, name)
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    return _text("<pre>\n%s</pre>\n" % xml_escape(text, quote=True))


def _collected(out, req):
    batch_id = _int(req, "batch_id")
    _check3(out, req, batch_id)
    directory = _collect_dir(out, batch_id)
    if not os.path.isdir(directory):
        raise OutputError("no batch dir")
    names = sorted(n for n in os.listdir(directory)
                   if os.path.isfile(os.path.join(directory, n)) and not n.startswith("."))
    return batch_id, directory, names


def get_batch_zip3(out, req):
    batch_id, directory, names = _collected(out, req)
    zip_path = out.zip_file([(os.path.join(directory, n), n) for n in names])
    return _download(zip_path, "batch_%d.zip" % batch_id, remove=True)


def get_batch_tar3(out, req):
    batch_id, directory, names = _collected(out, req)
    fd, path = tempfile.mkstemp(prefix="boinc_tar_", suffix=".tar")
    with os.fdopen(fd, "wb") as f, tarfile.open(fileobj=f, mode="w") as tar:
        for n in names:
            tar.add(os.path.join(directory, n), n)
    return _download(path, "batch_%d.tar" % batch_id, remove=True)


GET_OUTPUT3 = {"get_file": get_file3, "get_batch_zip": get_batch_zip3,
               "get_batch_tar": get_batch_tar3}


# ---------------------------------------------------------------------------

PAGES = {"get_output": ("cmd", GET_OUTPUT, "ERROR: %s", "bad command\n"),
         "get_output2": ("cmd", GET_OUTPUT2, "%s", "bad cmd\n"),
         "get_output3": ("action", GET_OUTPUT3, "%s", "")}


def handle(page, cfg, request):
    """Serve one get_output*.php request; return its Response."""
    key, commands, error_format, unknown = PAGES[page]
    ctx = RpcContext(cfg, request)
    try:
        cmd = request.get(key, None)
        if cmd is None:
            return _text(error_format % ("missing or bad parameter: %s" % key))
        handler = commands.get(cmd)
        if handler is None:
            return _text(unknown)
        return handler(Outputs(ctx), request)
    except OutputError as exc:
        return _text(error_format % exc)
    except Exception as exc:
        if isinstance(exc, BadRequest):
            return _text(error_format % exc.message)
        log_error(failure_text(exc, "%s.php failed" % page, "%s.php" % page))
        resp = _text(error_format % "server error")
        resp.status = "500 Internal Server Error"
        return resp
    finally:
        ctx.close()


def cgi_main(page):
    """Entry point of html/user/get_output*.php."""

    def handler(cfg, request):
        return handle(page, cfg, request)
    run_cgi(handler, page + ".php")
