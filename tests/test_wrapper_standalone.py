"""examples/wrapper on its own: a slot directory laid out as the stock client
lays it out (link files, init_data.xml naming the app version's files), no
client.  The BOINC runtime then runs standalone; what is checked is the
wrapper's own behaviour: which programs it agrees to run, the exit status it
ends with, the files it connects, what it refuses in job.xml.  Jobs on a real
client are tests/test_wrapper.py."""

import os
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(
    not shutil.which("g++") or not os.path.exists("/usr/include/boinc/boinc_api.h"),
    reason="needs g++ and libboinc-app-dev (tools/setup_system.sh)")

# error_numbers.h, as a process exit status (the low 8 bits)
ERR_NO_SIGNATURE = -123 & 0xff
ERR_XML_PARSE = -112 & 0xff
EXIT_CHILD_FAILED = 195


def _build(tmp_path_factory, *make_args):
    target = str(tmp_path_factory.mktemp("build") / "wrapper")
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "examples", "wrapper"),
                    "TARGET=" + target] + list(make_args), check=True)
    return target


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory):
    return _build(tmp_path_factory)


class Slot:
    """BOINC_DIR/projects/P/ (the app version's files) and BOINC_DIR/slots/0/."""

    def __init__(self, base, app_files):
        self.project = base / "projects" / "p"
        self.dir = base / "slots" / "0"
        self.project.mkdir(parents=True)
        self.dir.mkdir(parents=True)
        self.app_files = app_files

    def project_file(self, name, text, mode=0o644):
        path = self.project / name
        path.write_text(text)
        os.chmod(path, mode)

    def link(self, logical, physical):
        """The client's link file: the slot's name for a project file."""
        (self.dir / logical).write_text("<soft_link>../../projects/p/%s</soft_link>\n" % physical)

    def run(self, wrapper, *args):
        with open(self.dir / "init_data.xml", "w") as f:
            f.write("<app_init_data>\n<project_dir>%s</project_dir>\n%s</app_init_data>\n"
                    % (self.project, "".join("<app_file>%s</app_file>\n" % n
                                             for n in self.app_files)))
        return subprocess.run([wrapper] + list(args), cwd=self.dir, capture_output=True,
                              text=True, timeout=60)

    def stderr(self):
        return (self.dir / "stderr.txt").read_text() if (self.dir / "stderr.txt").exists() \
            else ""


JOB = """<job_desc>
    <task>
        <application>prog</application>
        <command_line>fixed "two words" boinc_resolve(data)</command_line>
        <stdin_filename>in</stdin_filename>
        <stdout_filename>out</stdout_filename>
        <append_cmdline_args/>
    </task>
</job_desc>
"""
PROG = """#!/bin/sh
tr a-z A-Z
for a in "$@"; do echo "[$a]"; done
exit ${EXIT:-0}
"""


def _slot(tmp_path, job=JOB, prog=PROG, prog_mode=0o755, app_files=("job_1.xml", "prog_1")):
    slot = Slot(tmp_path, list(app_files))
    slot.project_file("job_1.xml", job)
    slot.project_file("prog_1", prog, prog_mode)
    slot.project_file("input_1", "some input\n")
    slot.link("job.xml", "job_1.xml")
    slot.link("prog", "prog_1")
    slot.link("in", "input_1")
    slot.link("data", "input_1")
    slot.link("out", "result_out_1")
    return slot


def test_runs_the_program_with_its_files_and_arguments(wrapper, tmp_path):
    slot = _slot(tmp_path)
    proc = slot.run(wrapper, "--nthreads", "2", "--passthrough_child", "--job", "x y")
    assert proc.returncode == 0, slot.stderr()
    # stdin and stdout through the links, into the project directory
    assert (slot.project / "result_out_1").read_text() == (
        "SOME INPUT\n[fixed]\n[two words]\n[../../projects/p/input_1]\n[--job]\n[x y]\n")
    assert (slot.dir / "boinc_finish_called").exists()
    assert "called boinc_finish(0)" in slot.stderr()


def test_the_programs_exit_status_is_the_jobs(wrapper, tmp_path):
    slot = _slot(tmp_path, prog=PROG.replace("${EXIT:-0}", "3"))
    proc = slot.run(wrapper)
    assert proc.returncode == 3
    assert "the program exited with status 3" in slot.stderr()


def test_a_program_killed_by_a_signal_fails_the_job(wrapper, tmp_path):
    slot = _slot(tmp_path, prog="#!/bin/sh\nkill -KILL $$\n")
    proc = slot.run(wrapper)
    assert proc.returncode == EXIT_CHILD_FAILED
    assert "killed by signal 9" in slot.stderr()


def test_only_a_file_of_the_app_version_is_run(wrapper, tmp_path):
    """job.xml naming an input file (not signed, not in init_data.xml's
    app_files) is refused, and nothing runs."""
    slot = _slot(tmp_path, job=JOB.replace("<application>prog<", "<application>data<"))
    (slot.project / "input_1").write_text("#!/bin/sh\ntouch ran\n")
    os.chmod(slot.project / "input_1", 0o755)
    proc = slot.run(wrapper)
    assert proc.returncode == ERR_NO_SIGNATURE
    assert "won't run data (../../projects/p/input_1): it is not a file of the app version" \
        in slot.stderr()
    assert not (slot.dir / "ran").exists() and not (slot.project / "ran").exists()


def test_built_without_the_check_it_runs_any_program(tmp_path_factory, tmp_path):
    """make CHECK_EXECUTABLES=no: what BOINC's single-job setup needs (the
    program is an input file of each job)."""
    unchecked = _build(tmp_path_factory, "CHECK_EXECUTABLES=no")
    slot = _slot(tmp_path, job=JOB.replace("<application>prog<", "<application>data<"))
    (slot.project / "input_1").write_text("#!/bin/sh\ntouch ran\n")
    os.chmod(slot.project / "input_1", 0o755)
    proc = slot.run(unchecked)
    assert proc.returncode == 0, slot.stderr()
    assert (slot.dir / "ran").exists()


def test_a_program_that_is_not_executable(wrapper, tmp_path):
    slot = _slot(tmp_path, prog_mode=0o644)
    proc = slot.run(wrapper)
    assert proc.returncode == 127
    assert "can't run ../../projects/p/prog_1: Permission denied" in slot.stderr()


@pytest.mark.parametrize("job, message", [
    (JOB.replace("</job_desc>", "<task><application>prog</application></task></job_desc>"),
     "more than one <task>"),
    (JOB.replace("<task>", "<task><daemon/>"), "<daemon/> tasks need BOINC's wrapper"),
    (JOB.replace("</job_desc>", "<zip_output><zipfilename>z</zipfilename></zip_output>"
                                "</job_desc>"), "<zip_output> needs BOINC's wrapper"),
    ("<job_desc><task><command_line>x</command_line></task></job_desc>",
     "the <task> has no <application>"),
    ("<job_desc>", "<job_desc> is not closed"),
])
def test_what_this_wrapper_refuses_in_job_xml(wrapper, tmp_path, job, message):
    slot = _slot(tmp_path, job=job)
    proc = slot.run(wrapper)
    assert proc.returncode == ERR_XML_PARSE
    assert message in slot.stderr()
    assert not (slot.project / "result_out_1").exists()
