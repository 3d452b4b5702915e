"""BOINC's stock assimilators: sample, script, dummy and single-job.

Each is an :class:`~boincpy.daemons.assimilator.Assimilator` whose
assimilate_handler follows the C++ one of the same name (sample_assimilator
as in BOINC 7.x: PROJECT/sample_results/), written to be idempotent because a
crash can make the framework call it twice for the same job.
"""

import os
import shlex
import shutil
import subprocess
import tempfile

from boincpy.daemons.assimilator import Assimilator
from boincpy.cli import option
from boincpy.errors import ToolError
from boincpy.files import dir_hier_path
from boincpy.jobfiles import ERR_FOPEN, OutputFilesError
from boincpy.states import WuError


def copy_atomically(src, dst):
    """Copy ``src`` to ``dst`` through a temporary file renamed into place, so
    ``dst`` is never partial and copying again just replaces it."""
    directory = os.path.dirname(os.path.abspath(dst))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp_")
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
            shutil.copyfileobj(inp, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, dst)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def append_line_once(path, line):
    """Append ``line`` to ``path`` unless the file already has it (idempotent append)."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            if line in f.read().splitlines():
                return
    except FileNotFoundError:
        pass
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


class SampleAssimilator(Assimilator):
    """Copies the canonical result's output files to PROJECT/sample_results/
    (``WUNAME`` for one file, ``WUNAME_0``, ``WUNAME_1``... for several;
    ``WUNAME_no_output_files`` if none could be copied) and appends
    ``WUNAME: 0xERRORMASK`` to sample_results/errors for failed jobs."""

    name = "sample_assimilator"

    def assimilate_handler(self, wu, results, canonical_result):
        outdir = self.cfg.project_path("sample_results")
        os.makedirs(outdir, exist_ok=True)
        if not wu.canonical_resultid:
            append_line_once(os.path.join(outdir, "errors"), "%s: 0x%x" % (wu.name, wu.error_mask))
            return 0
        try:
            files = self.output_file_infos(canonical_result)
        except OutputFilesError:
            files = []
        copied = False
        for i, fi in enumerate(files):
            name = wu.name if len(files) == 1 else "%s_%d" % (wu.name, i)
            try:
                copy_atomically(fi.path, os.path.join(outdir, name))
                copied = True
            except FileNotFoundError:
                self.log.critical("[%s] output file %s is missing" % (wu.name, fi.path))
        if not copied:
            try:
                open(os.path.join(outdir, "%s_no_output_files" % wu.name), "w").close()
            except OSError:
                return ERR_FOPEN
        return 0


class ScriptAssimilator(Assimilator):
    """Runs PROJECT/bin/SCRIPT for each finished job (--script "SCRIPT TOKENS").

    Tokens: ``files`` (canonical output paths), ``files2`` (path and logical
    name of each), ``wu_id``, ``wu_name``, ``result_id``, ``runtime``,
    ``batch_id``; default ``wu_id files``.  A failed job runs
    ``SCRIPT --error ERROR_MASK WU_NAME WU_ID BATCH_ID``.  A non-zero exit
    status is a handler error (the job stays READY and the daemon exits).
    """

    name = "script_assimilator"

    @classmethod
    def add_options(cls, params):
        super().add_options(params)
        params.append(option("script", default="", metavar='"SCRIPT TOKENS"',
                             help="script (in PROJECT/bin) and argument tokens"))

    def configure(self):
        self.script = self.args.script.split()
        if len(self.script) == 1:
            self.script += ["wu_id", "files"]
        if not self.script:
            raise ToolError("script name missing from command line")

    def _script_path(self):
        name = self.script[0]
        return name if os.path.isabs(name) else self.cfg.project_path("bin", name)

    def assimilate_handler(self, wu, results, canonical_result):
        argv = [self._script_path()]
        if wu.canonical_resultid:
            try:
                files = self.output_file_infos(canonical_result)
            except OutputFilesError as exc:
                self.log.critical("[%s] %s" % (wu.name, exc))
                return exc.code
            for t in self.script[1:]:
                if t == "files":
                    argv += [fi.path for fi in files]
                elif t == "files2":
                    for fi in files:
                        argv += [fi.path, fi.logical_name]
                elif t == "wu_id":
                    argv.append("%d" % wu.id)
                elif t == "wu_name":
                    argv.append(wu.name)
                elif t == "result_id":
                    argv.append("%d" % wu.canonical_resultid)
                elif t == "runtime":
                    argv.append("%f" % canonical_result.elapsed_time)
                elif t == "batch_id":
                    argv.append("%d" % wu.batch)
        else:
            argv += ["--error", "%d" % wu.error_mask, wu.name, "%d" % wu.id, "%d" % wu.batch]
        self.log.debug("invoking script: %s" % shlex.join(argv))
        try:
            status = subprocess.run(argv, stdin=subprocess.DEVNULL).returncode
        except OSError as exc:
            self.log.normal("can't run script %s: %s" % (argv[0], exc))
            return ERR_FOPEN
        if status:
            self.log.normal("error %d from script: %s" % (status, shlex.join(argv)))
            return status if status > 0 else 1
        return 0


class DummyAssimilator(Assimilator):
    """Logs each job (canonical result or error bits) and does nothing else;
    the job's files are then deleted unless marked no_delete."""

    name = "sample_dummy_assimilator"

    def assimilate_handler(self, wu, results, canonical_result):
        self.log.normal("Assimilating %s" % wu.name)
        if wu.canonical_resultid:
            self.log.normal("Found canonical result")
            if self.log.wanted(4):      # the details cost a parse: only at -d 4
                self._log_canonical(wu, canonical_result)
        else:
            self.log.normal("[%s] No canonical result" % wu.name)
        for bit, text in ((WuError.COULDNT_SEND_RESULT, "couldn't send a result"),
                          (WuError.TOO_MANY_ERROR_RESULTS, "too many error results"),
                          (WuError.TOO_MANY_TOTAL_RESULTS, "too many total results"),
                          (WuError.TOO_MANY_SUCCESS_RESULTS, "too many success results")):
            if wu.error_mask & bit:
                self.log.warning("[%s] Warning: %s" % (wu.name, text))
        return 0

    def _log_canonical(self, wu, canonical_result):
        self.log.debug("[%s] canonical result\n%s" % (wu.name, canonical_result.xml_doc_out))
        try:
            files = self.output_file_infos(canonical_result)
        except OutputFilesError:
            files = []
        if files:
            self.log.debug("[%s] Output file path %s" % (wu.name, files[0].path))


class SingleJobAssimilator(Assimilator):
    """For jobs made by single_job_setup: copies the outputs into the job's
    directory (named in upload/.../sj_WUID as ``<job_dir>DIR</job_dir>``) under
    their logical names, writes DIR/job_summary_WUID, and removes the per-job
    templates and the sj_WUID file -- the latter last, so a repeated call
    finds it and does the same again."""

    name = "single_job_assimilator"

    def assimilate_handler(self, wu, results, canonical_result):
        for t in ("sj_wu_template_%d", "sj_result_template_%d"):
            try:
                os.unlink(self.cfg.project_path("templates", t % wu.id))
            except FileNotFoundError:
                pass
        job_file = dir_hier_path(self.cfg.upload_dir, "sj_%d" % wu.id, self.cfg.uldl_dir_fanout)
        try:
            with open(job_file, encoding="utf-8", errors="replace") as f:
                line = f.readline()
        except OSError:
            self.log.critical("Can't open job file %s" % job_file)
            return 0
        start, end = line.find("<job_dir>"), line.find("</job_dir>")
        if start < 0 or end < start:
            self.log.critical("garbage in job file: %s" % line.rstrip("\n"))
            return 0
        job_dir = line[start + len("<job_dir>"):end]
        lines = []
        if wu.canonical_resultid:
            lines.append("Job was completed by host %d.\nCPU time: %f seconds\n"
                         % (canonical_result.hostid, canonical_result.cpu_time))
            try:
                files = self.output_file_infos(canonical_result)
            except OutputFilesError:
                files = []
            for fi in files:
                try:
                    copy_atomically(fi.path, os.path.join(job_dir, fi.logical_name))
                except OSError:
                    lines.append("Output file %s not present.\n" % fi.logical_name)
        else:
            lines.append("The job was not successfully completed.\nError: 0x%x\n"
                         % wu.error_mask)
        summary = os.path.join(job_dir, "job_summary_%d" % wu.id)
        try:
            with open(summary, "w") as f:
                f.write("".join(lines))
        except OSError:
            self.log.critical("Can't open job summary file %s" % summary)
            return ERR_FOPEN
        try:
            os.unlink(job_file)
        except FileNotFoundError:
            pass
        return 0
