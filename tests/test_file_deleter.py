"""file_deleter against MariaDB and files in the project's upload/download fan-out."""

import os
import time

import pytest

from backend_rows import (add_result, add_workunit, app_id, db_of, download_path, project_config,
                          row, run_pass, wu_xml)
from boincpy.daemons.file_deleter import FileDeleter


@pytest.fixture
def proj(mini_project):
    db = db_of(mini_project)
    yield dict(db=db, root=mini_project, appid=app_id(db))
    db.close()


def staged(root, name, data=b"input\n", extras=()):
    path = download_path(root, name)
    with open(path, "wb") as f:
        f.write(data)
    for ext in extras:
        with open(path + ext, "wb") as f:
            f.write(b"x")
    return path


def finished_wu(ctx, name, inputs=(), state=1, **kw):
    return add_workunit(ctx["db"], name, ctx["appid"], need_validate=0, assimilate_state=2,
                        file_delete_state=state, xml_doc=wu_xml(inputs, **kw))


def test_output_files_deleted_and_no_delete_kept(proj):
    db, root = proj["db"], proj["root"]
    wu = finished_wu(proj, "wu_o", state=0)
    r1, p1 = add_result(db, root, wu, "wu_o_0", outputs=[b"a", b"b"], output_names=("x", "y"),
                        no_delete=("y",), file_delete_state=1)
    r2, p2 = add_result(db, root, wu, "wu_o_1", outputs=[None], file_delete_state=1)
    r3, p3 = add_result(db, root, wu, "wu_o_2", outputs=[b"c"], file_delete_state=0)
    d, found = run_pass(FileDeleter, root, "--one_pass")
    assert found
    assert not os.path.exists(p1[0]) and os.path.exists(p1[1])
    assert os.path.exists(p3[0])                         # not READY: untouched
    assert [row(db, "result", r)["file_delete_state"] for r in (r1, r2, r3)] == [2, 2, 0]
    log = d.log_stream.getvalue()
    assert "[RESULT#%d] unlinked %s" % (r1, p1[0]) in log
    assert "No file wu_o_1_r1234_0 to delete" in log      # a SUCCESS result without its file


def test_input_files_with_gz_and_md5(proj):
    db, root = proj["db"], proj["root"]
    project_config(root, cache_md5_info=True)
    path = staged(root, "in_a.txt", extras=(".md5", ".gz"))
    wu = finished_wu(proj, "wu_in", ("in_a.txt",))
    d, _ = run_pass(FileDeleter, root, "--one_pass")
    assert not any(os.path.exists(path + e) for e in ("", ".md5", ".gz"))
    assert row(db, "workunit", wu)["file_delete_state"] == 2
    assert "[WU#%d] deleting in_a.txt" % wu in d.log_stream.getvalue()


def test_md5_left_by_a_killed_pass_is_deleted(proj):
    """Found by the 10,000-job soak: the file deleter was killed between
    unlinking an input and its .md5, and the next pass, finding no input,
    left the .md5 for ever.  The companions now go first, and a companion
    whose file is already gone is still deleted."""
    db, root = proj["db"], proj["root"]
    project_config(root, cache_md5_info=True)
    path = staged(root, "in_md5_left.txt", extras=(".md5",))
    os.unlink(path)                                     # as the killed pass left it
    wu = finished_wu(proj, "wu_md5_left", ("in_md5_left.txt",))
    d, _ = run_pass(FileDeleter, root, "--one_pass")
    assert not os.path.exists(path + ".md5")
    assert row(db, "workunit", wu)["file_delete_state"] == 2
    log = d.log_stream.getvalue()
    assert "[WU#%d] deleting in_md5_left.txt.md5" % wu in log
    assert "get_file_path: in_md5_left.txt: file not found" in log


def test_companions_go_before_the_file(proj, monkeypatch):
    """A kill after the first unlink leaves the file itself, so the next pass
    finds it and finishes the job."""
    root = proj["root"]
    project_config(root, cache_md5_info=True)
    path = staged(root, "in_order.txt", extras=(".md5", ".gz"))
    finished_wu(proj, "wu_order", ("in_order.txt",))
    order = []
    real = os.unlink
    monkeypatch.setattr(os, "unlink", lambda p: (order.append(os.path.basename(p)), real(p)))
    run_pass(FileDeleter, root, "--one_pass")
    assert order == ["in_order.txt.gz", "in_order.txt.md5", "in_order.txt"]


def test_shared_input_kept_until_last_workunit(proj):
    db, root = proj["db"], proj["root"]
    path = staged(root, "shared_1.txt")
    own = staged(root, "own_1.txt")
    a = finished_wu(proj, "wu_sh_a", ("shared_1.txt", "own_1.txt"))
    b = add_workunit(db, "wu_sh_b", proj["appid"], xml_doc=wu_xml(("shared_1.txt",)))
    # a name LIKE would match if "_" were not escaped: not a sharer
    staged(root, "sharedX1.txt")
    finished_wu(proj, "wu_sh_c", ("sharedX1.txt",), state=0)
    run_pass(FileDeleter, root, "--one_pass")
    assert row(db, "workunit", a)["file_delete_state"] == 2
    assert os.path.exists(path) and not os.path.exists(own)
    db.execute("UPDATE workunit SET file_delete_state = 1 WHERE id = %s", (b,))
    run_pass(FileDeleter, root, "--one_pass")
    assert row(db, "workunit", b)["file_delete_state"] == 2
    assert not os.path.exists(path)


def test_shared_input_deleted_with_boinc_behaviour_option(proj):
    db, root = proj["db"], proj["root"]
    path = staged(root, "shared_2.txt")
    finished_wu(proj, "wu_bc_a", ("shared_2.txt",))
    add_workunit(db, "wu_bc_b", proj["appid"], xml_doc=wu_xml(("shared_2.txt",)))
    run_pass(FileDeleter, root, "--one_pass", "--dont_check_shared_inputs")
    assert not os.path.exists(path)


def test_shared_by_many_workunits(proj):
    """More sharers than one scan returns: the name is still found in use."""
    import boincpy.daemons.file_deleter as fd
    db, root = proj["db"], proj["root"]
    path = staged(root, "pool.txt")
    uniq = staged(root, "uniq.txt")
    for i in range(5):
        add_workunit(db, "wu_pool_%d" % i, proj["appid"], xml_doc=wu_xml(("pool.txt",)))
    finished_wu(proj, "wu_pool_done", ("pool.txt", "uniq.txt"))
    old = fd._SHARED_SCAN_ROWS
    fd._SHARED_SCAN_ROWS = 2
    try:
        run_pass(FileDeleter, root, "--one_pass")
    finally:
        fd._SHARED_SCAN_ROWS = old
    assert os.path.exists(path) and not os.path.exists(uniq)


def test_no_delete_sticky_and_nodelete_name(proj):
    db, root = proj["db"], proj["root"]
    keep = staged(root, "keep.txt")
    stick = staged(root, "stick.txt")
    tmpl = staged(root, "tmpl.txt")
    w1 = finished_wu(proj, "wu_nd", ("keep.txt", "stick.txt"), no_delete=("keep.txt",),
                     sticky=("stick.txt",))
    w2 = finished_wu(proj, "wu_nodelete_template", ("tmpl.txt",))
    run_pass(FileDeleter, root, "--one_pass")
    assert all(os.path.exists(p) for p in (keep, stick, tmpl))
    assert row(db, "workunit", w1)["file_delete_state"] == 2
    assert row(db, "workunit", w2)["file_delete_state"] == 2


def test_missing_directory_is_an_error_retried_later(proj):
    db, root = proj["db"], proj["root"]
    path = download_path(root, "lost.txt", create=False)
    assert not os.path.isdir(os.path.dirname(path))
    wu = finished_wu(proj, "wu_lost", ("lost.txt",))
    run_pass(FileDeleter, root, "--one_pass", "--dont_retry_errors")
    assert row(db, "workunit", wu)["file_delete_state"] == 3
    os.makedirs(os.path.dirname(path))
    run_pass(FileDeleter, root, "--one_pass", "--dont_retry_errors")
    assert row(db, "workunit", wu)["file_delete_state"] == 3      # not retried
    run_pass(FileDeleter, root, "--one_pass")                     # retried at start-up
    assert row(db, "workunit", wu)["file_delete_state"] == 2


def test_unlink_failure_is_an_error(proj):
    db, root = proj["db"], proj["root"]
    wu = finished_wu(proj, "wu_u", state=0)
    rid, paths = add_result(db, root, wu, "wu_u_0", outputs=[None], file_delete_state=1)
    os.makedirs(paths[0])                # a directory where the file should be
    run_pass(FileDeleter, root, "--one_pass", "--dont_retry_errors")
    assert row(db, "result", rid)["file_delete_state"] == 3


def test_input_only_output_only_and_preserve(proj):
    db, root = proj["db"], proj["root"]
    inp = staged(root, "io.txt")
    wu = finished_wu(proj, "wu_io", ("io.txt",))
    rid, outs = add_result(db, root, wu, "wu_io_0", outputs=[b"o"], file_delete_state=1)
    run_pass(FileDeleter, root, "--one_pass", "--output_files_only")
    assert os.path.exists(inp) and not os.path.exists(outs[0])
    assert row(db, "workunit", wu)["file_delete_state"] == 1
    run_pass(FileDeleter, root, "--one_pass", "--input_files_only", "--preserve_wu_files")
    assert os.path.exists(inp)
    assert row(db, "workunit", wu)["file_delete_state"] == 2


def test_no_db_update(proj):
    db, root = proj["db"], proj["root"]
    inp = staged(root, "nd.txt")
    wu = finished_wu(proj, "wu_ndb", ("nd.txt",))
    run_pass(FileDeleter, root, "--one_pass", "--no_db_update")
    assert not os.path.exists(inp)
    assert row(db, "workunit", wu)["file_delete_state"] == 1


def test_delete_delay_hours(proj):
    db, root = proj["db"], proj["root"]
    project_config(root, delete_delay_hours=2)
    now = int(time.time())
    recent = finished_wu(proj, "wu_recent", state=0)
    r1, p1 = add_result(db, root, recent, "wu_recent_0", outputs=[b"1"], file_delete_state=1,
                        received_time=now - 600)
    old = finished_wu(proj, "wu_old", state=0)
    r2, p2 = add_result(db, root, old, "wu_old_0", outputs=[b"2"], file_delete_state=1,
                        received_time=now - 3 * 3600)
    run_pass(FileDeleter, root, "--one_pass")
    assert row(db, "result", r1)["file_delete_state"] == 1 and os.path.exists(p1[0])
    assert row(db, "result", r2)["file_delete_state"] == 2 and not os.path.exists(p2[0])


def test_mod_and_app_filters(proj):
    db, root = proj["db"], proj["root"]
    other = db.insert("INSERT INTO app (create_time, name) VALUES (0, 'other')")
    w_other = add_workunit(db, "wu_other", other, file_delete_state=1, xml_doc=wu_xml())
    ws = [finished_wu(proj, "wu_m%d" % i) for i in range(4)]
    run_pass(FileDeleter, root, "--one_pass", "--app", "example_app", "--mod", "2", "1")
    for w in ws:
        assert row(db, "workunit", w)["file_delete_state"] == (2 if w % 2 == 1 else 1)
    assert row(db, "workunit", w_other)["file_delete_state"] == 1
