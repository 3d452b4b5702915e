"""boincpy.record: the records that stand in for dataclasses on the classic
CGIs' paths (the scheduler's request and context, the tables' rows, the
web's request and response), and the import cost they save a page."""

import os
import subprocess
import sys

import pytest

from boincpy.db import rows
from boincpy.record import Record, factory
from boincpy.tools.server_mode import cgi_paths

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Job(Record):
    FIELDS = (("name", ""), ("priority", 0), ("files", list), ("made", factory(lambda: [1])))


class UrgentJob(Job):
    FIELDS = Job.FIELDS + (("deadline", 0.0),)


def test_defaults_positional_and_keyword_arguments():
    job = Job("wu_1", files=["in"])
    assert (job.name, job.priority, job.files, job.made) == ("wu_1", 0, ["in"], [1])
    # a class or factory default is made anew for each instance
    a, b = Job(), Job()
    a.files.append("x")
    a.made.append(2)
    assert b.files == [] and b.made == [1]
    with pytest.raises(TypeError, match="two values"):
        Job("a", name="b")
    with pytest.raises(TypeError, match="no field 'size'"):
        Job(size=3)
    with pytest.raises(TypeError, match="at most 4"):
        Job(1, 2, 3, 4, 5)
    # slots: a misspelt attribute is an error, not a new attribute
    with pytest.raises(AttributeError):
        job.prority = 3


def test_equality_and_repr_as_dataclasses_had_them():
    assert Job("a", 1) == Job("a", 1)
    assert Job("a", 1) != Job("a", 2)
    assert Job("a") != UrgentJob("a")
    assert repr(Job("a")) == "Job(name='a', priority=0, files=[], made=[1])"
    with pytest.raises(TypeError):
        hash(Job())


def test_a_subclass_keeps_its_base_fields_and_adds_its_own():
    job = UrgentJob("wu_2", 5, deadline=3.5)
    assert (job.name, job.priority, job.deadline) == ("wu_2", 5, 3.5)
    assert UrgentJob._names == ("name", "priority", "files", "made", "deadline")
    assert UrgentJob.__slots__ == ("deadline",)
    with pytest.raises(TypeError, match="must start with its base's"):
        class Wrong(Job):
            FIELDS = (("deadline", 0.0),)


def test_rows_are_records_with_their_tables_columns():
    host = rows.Host.from_row({"id": 7, "domain_name": "h", "not_a_column": 1})
    assert (host.id, host.domain_name, host.p_ncpus) == (7, "h", 0)
    assert rows.Host.columns()[:2] == ("id", "create_time")
    assert "id" not in rows.Host.insert_columns() and "mod_time" not in rows.Result.insert_columns()
    assert rows.App.from_row(None) is None
    app = rows.App(name="uppercase", weight=2.0)
    assert app.insert_values()[rows.App.insert_columns().index("weight")] == 2.0
    assert app == rows.App(name="uppercase", weight=2.0)


def test_no_site_page_pays_for_dataclasses():
    # what a page of the site and its rows import: dataclasses brought inspect,
    # ast and dis (10 ms of every classic CGI page) and made the 16 rows (8 ms)
    code = ("import sys; import boincpy.web.user.main, boincpy.web.user.account, "
            "boincpy.web.user.tasks, boincpy.web.master, boincpy.web.rpc, boincpy.db.rows; "
            "print(' '.join(m for m in ('dataclasses', 'inspect', 'ast', 'dis') "
            "if m in sys.modules))")
    # run as make_project runs a page: python -S, site's paths given
    paths = [REPO] + (cgi_paths(sys.executable) or [])
    out = subprocess.run([sys.executable, "-S", "-c", "import sys; sys.path[:0] = %r; %s"
                          % (paths, code)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", out.stdout
