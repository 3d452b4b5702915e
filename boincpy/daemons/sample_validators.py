"""BOINC's stock validators: trivial, bitwise, substring and script.

Each is a :class:`~boincpy.daemons.validator.Validator` with its own
init_result / compare_results (BOINC's sample_*_validator.cpp and
script_validator.cpp); ``bin/NAME`` runs one with :func:`run_daemon`.
"""

import hashlib
import os
import shlex
import subprocess

from boincpy.cli import option
from boincpy.daemons.validator import (VAL_RESULT_LONG_TERM_FAIL, VAL_RESULT_TRANSIENT_ERROR,
                                       Validator)
from boincpy.errors import ToolError
from boincpy.jobfiles import ERR_FOPEN, ERR_OPENDIR
from boincpy.states import Outcome

ERR_BAD_FORMAT = -126
_GZIP_MAGIC = b"\x1f\x8b\x08"


class TrivialValidator(Validator):
    """Accepts every successful result; client errors count as long-term failures
    (for --check_punitive)."""

    name = "sample_trivial_validator"

    def init_result(self, result):
        if result.outcome == Outcome.CLIENT_ERROR:
            return VAL_RESULT_LONG_TERM_FAIL, None
        return 0, None


def md5_of_output(path, is_gzip=False):
    """(code, md5 hex) of an output file as BOINC's md5_file computes it; with
    ``is_gzip`` the 10-byte gzip header (time stamp, OS) is left out."""
    md5 = hashlib.md5()
    try:
        f = open(path, "rb")
    except OSError:
        return ERR_FOPEN, ""
    with f:
        if is_gzip:
            head = f.read(10)
            if len(head) != 10 or head[:3] != _GZIP_MAGIC:
                return ERR_BAD_FORMAT, ""
        while True:
            block = f.read(1 << 20)
            if not block:
                break
            md5.update(block)
    return 0, md5.hexdigest()


class BitwiseValidator(Validator):
    """Results match when all their output files are byte-for-byte identical."""

    name = "sample_bitwise_validator"

    @classmethod
    def add_options(cls, params):
        super().add_options(params)
        params.append(option("is_gzip", is_flag=True,
                             help="files are gzipped; skip the 10-byte header when comparing"))

    def init_result(self, result):
        """MD5s of the result's output files (skipping <no_validate/> ones)."""
        if not os.path.isdir(self.cfg.upload_dir):
            # the whole upload directory is gone (an unmounted share): retry later
            return ERR_OPENDIR, None
        sums = []
        for fi in self.output_file_infos(result):
            if fi.no_validate:
                continue
            code, digest = md5_of_output(fi.path, self.args.is_gzip)
            if code:
                if fi.optional and code == ERR_FOPEN:
                    digest = ""         # missing optional file: not the MD5 of ""
                else:
                    self.log.critical("[RESULT#%d %s] md5_file() failed for %s: %d"
                                      % (result.id, result.name, fi.path, code))
                    return code, None
            sums.append(digest)
        return 0, sums

    def compare_results(self, r1, data1, r2, data2):
        return 0, data1 == data2


class SubstrValidator(Validator):
    """A result is valid iff each --stderr_string is in its stderr
    (or, with --reject_if_present, none is)."""

    name = "sample_substr_validator"

    @classmethod
    def add_options(cls, params):
        super().add_options(params)
        params.append(option("stderr_string", multiple=True, metavar="X",
                             help="accept the task if X is in its stderr "
                                  "(repeatable)"))
        params.append(option("reject_if_present", is_flag=True,
                             help="reject (invalidate) the task if X is present"))

    def configure(self):
        if not self.args.stderr_string:
            raise ToolError("--stderr_string missing from command line")

    def init_result(self, result):
        for s in self.args.stderr_string:
            present = s in result.stderr_out
            if present == self.args.reject_if_present:
                return -1, None
        return 0, None


class ScriptValidator(Validator):
    """Runs PROJECT/bin/SCRIPT to check (--init_script) and compare
    (--compare_script) results; exit 0 = valid / match, 3 = transient error,
    anything else = invalid / no match.

    Tokens after the script name become arguments: ``files`` (output paths),
    ``result_id``, ``runtime`` (elapsed seconds), and for the compare script
    also ``files2``, ``result_id2``, ``runtime2`` for the second result.
    Defaults: ``SCRIPT files`` and ``SCRIPT files files2``.
    """

    name = "script_validator"

    @classmethod
    def add_options(cls, params):
        super().add_options(params)
        params.append(option("init_script", default="", metavar='"SCRIPT ARGS"',
                             help="check each result (tokens: files result_id runtime)"))
        params.append(option("compare_script", default="", metavar='"SCRIPT ARGS"',
                             help="compare two results (tokens: files result_id runtime "
                                  "files2 result_id2 runtime2)"))

    def configure(self):
        self.init_cmd = self.args.init_script.split()
        self.compare_cmd = self.args.compare_script.split()
        if len(self.init_cmd) == 1:
            self.init_cmd.append("files")
        if len(self.compare_cmd) == 1:
            self.compare_cmd += ["files", "files2"]
        if not self.init_cmd and not self.compare_cmd:
            raise ToolError("command line must specify init_script or compare_script")

    def _script_path(self, name):
        if os.path.isabs(name):
            return name
        return self.cfg.project_path("bin", name)

    def _argv(self, tokens, r1, r2=None):
        argv = [self._script_path(tokens[0])]
        for t in tokens[1:]:
            if t == "files":
                argv += [fi.path for fi in self.output_file_infos(r1)]
            elif t == "result_id":
                argv.append("%d" % r1.id)
            elif t == "runtime":
                argv.append("%f" % r1.elapsed_time)
            elif r2 is not None and t == "files2":
                argv += [fi.path for fi in self.output_file_infos(r2)]
            elif r2 is not None and t == "result_id2":
                argv.append("%d" % r2.id)
            elif r2 is not None and t == "runtime2":
                argv.append("%f" % r2.elapsed_time)
        return argv

    def _run(self, argv, what):
        self.log.debug("running %s script: %s" % (what, shlex.join(argv)))
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL)
        except OSError as exc:
            self.log.critical("%s script %s didn't run: %s" % (what, argv[0], exc))
            return None
        if proc.returncode < 0:
            self.log.critical("%s script %s didn't exit" % (what, shlex.join(argv)))
            return None
        return proc.returncode

    def init_result(self, result):
        if not self.init_cmd:
            return 0, None
        status = self._run(self._argv(self.init_cmd, result), "init")
        if status == 0:
            return 0, None
        if status == VAL_RESULT_TRANSIENT_ERROR:
            self.log.normal("init script return transient error")
            return VAL_RESULT_TRANSIENT_ERROR, None
        if status is not None:
            self.log.normal("init script %s returned: %d" % (self.init_cmd[0], status))
        return -1, None

    def compare_results(self, r1, data1, r2, data2):
        if not self.compare_cmd:
            return 0, True
        status = self._run(self._argv(self.compare_cmd, r1, r2), "compare")
        if status is None:
            return -1, False
        if status == VAL_RESULT_TRANSIENT_ERROR:
            return VAL_RESULT_TRANSIENT_ERROR, False
        return 0, status == 0
