"""Physical file names (issue 28): one check, ``files.check_file_name``, wherever a
name enters, and ``files.dir_hier_path`` never leaving its root.

The hole this closes: a submitter's job-level input template with
``<file_info><name>../../config.xml</name>`` was accepted, the server's own
``<name>`` written after it, and the file deleter, reading the first, unlinked
PROJECT/config.xml when the job ended; an output template could send
volunteers' results to any host."""

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend_rows import add_result, add_workunit, app_id, db_of, run_pass
from boincpy.daemons.file_deleter import FileDeleter
from boincpy.errors import FileNameError, TemplateError
from boincpy.files import bucket, check_file_name, dir_hier_path, file_name_fault
from boincpy.templates import parse_input_template, parse_output_template
from conftest import EXAMPLE_IN, EXAMPLE_OUT
from test_submit_backend import proj  # noqa: F401 (the fixture: submitters alice ... dave)

TRAVERSALS = ("../../config.xml", "./../../config.xml", "././../../config.xml")


# ---------------------------------------------------------------------------
# The check itself.

@pytest.mark.parametrize("name, fault", [
    ("../../config.xml", "contains '/'"),
    ("./../../x", "contains '/'"),
    ("a\\b", "contains '\\'"),
    ("..", "contains '..'"),
    ("a..b", "contains '..'"),
    (".htaccess", "starts with '.'"),
    (".x.part", "starts with '.'"),
    ("", "empty"),
    ("a\x00b", "contains control character '\\x00'"),
    ("a\nb", "contains control character '\\n'"),
    ("a\x85b", "contains control character '\\x85'"),
    ("x</name><url>", "contains '/'"),
    ("a<b", "contains '<'"),
    ("a&amp;b", "contains '&'"),
    ("é" * 128, "256 bytes long (at most 255)"),
    ("x\udcff", "not valid UTF-8"),
])
def test_refused_names(name, fault):
    assert file_name_fault(name) == fault
    with pytest.raises(FileNameError) as info:
        check_file_name(name, "input_template: file_info name")
    assert info.value.message.startswith("input_template: file_info name '")
    assert info.value.message.endswith("': " + fault)


@pytest.mark.parametrize("name", ["in", "jf_0123456789abcdef0123456789abcdef", "a.b.c",
                                  "wu_1_r12345_0", "a b", "x:y@z+1", "é" * 127, "a" * 255])
def test_accepted_names(name):
    assert check_file_name(name) == name


def test_message_quotes_the_name_and_field():
    with pytest.raises(FileNameError) as info:
        check_file_name("../../config.xml", "input_template: file_info name")
    assert str(info.value) == "input_template: file_info name '../../config.xml': contains '/'"


def _inside(root, path):
    root = os.path.normpath(root)
    return os.path.commonpath([root, os.path.normpath(path)]) == root and \
        os.path.normpath(path) != root


@settings(max_examples=500, deadline=None)
@given(st.text(min_size=1, max_size=300), st.sampled_from([0, 1, 1024]))
def test_an_accepted_name_stays_inside_the_root(name, fanout):
    root = "/proj/download"
    if file_name_fault(name) is None:
        assert _inside(root, dir_hier_path(root, name, fanout))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("./\\\x00a_")), max_size=12),
       st.sampled_from([0, 1024]))
def test_dir_hier_path_never_leaves_its_root(name, fanout):
    """Defence in depth: whatever a caller forgot to check, dir_hier_path
    refuses (FileNameError) rather than return a path outside its root."""
    root = "/proj/upload"
    try:
        path = dir_hier_path(root, name, fanout)
    except FileNameError:
        return
    assert _inside(root, path), (name, path)


# ---------------------------------------------------------------------------
# Templates.

# the example app's templates, with a slot for what a submitter adds or changes
SUBMITTED_IN = EXAMPLE_IN.replace("<number>0</number>", "<number>0</number>\n        %s")
OUT = EXAMPLE_OUT.replace("<name><OUTFILE_0/></name>", "<name>%s</name>").replace(
    "<url><UPLOAD_URL/></url>", "<url>%s</url>")


@pytest.mark.parametrize("field", ["<url>http://evil.example/</url>", "<md5_cksum>0</md5_cksum>",
                                   "<nbytes>5</nbytes>", "<download_url>http://e/</download_url>",
                                   "<gzipped_url>http://e/</gzipped_url>", "<name>fine</name>"])
def test_a_submitted_input_template_may_not_set_what_the_server_writes(field):
    tag = field[1:field.index(">")]
    with pytest.raises(TemplateError, match="may not set <%s>: the server writes it" % tag):
        parse_input_template(SUBMITTED_IN % field, "input_template", submitted=True)


@pytest.mark.parametrize("name", TRAVERSALS)
def test_a_submitted_input_template_naming_a_path(name):
    with pytest.raises(FileNameError) as info:
        parse_input_template(SUBMITTED_IN % ("<name>%s</name>" % name), "input_template",
                             submitted=True)
    assert info.value.message == "input_template: file_info name '%s': contains '/'" % name


def test_an_operators_template_keeps_one_name_per_file_info(tmp_path):
    """An operator's <name> is dropped (BOINC copied it before its own)."""
    t = parse_input_template(SUBMITTED_IN % "<name>theirs</name><sticky/>", "t")
    assert t.file_infos[0].extras == "<sticky/>\n"
    with pytest.raises(FileNameError, match="t: file_info physical_name '../x': contains '/'"):
        parse_input_template(SUBMITTED_IN % "<physical_name>../x</physical_name>", "t")


@pytest.mark.parametrize("name", TRAVERSALS + (".hidden", "<OUTFILE_0/>/../x"))
def test_output_template_names_are_file_names(name):
    with pytest.raises(FileNameError, match="output_template: file_info name"):
        parse_output_template(OUT % (name, "<UPLOAD_URL/>"), "output_template")


def test_output_template_with_two_names_or_a_foreign_url():
    two = OUT % ("<OUTFILE_0/></name>\n    <name>../x", "<UPLOAD_URL/>")
    with pytest.raises(TemplateError, match="more than one <name>"):
        parse_output_template(two, "output_template")
    ours = "http://127.0.0.1/test_cgi/file_upload_handler"
    for url in (ours, "<UPLOAD_URL/>"):
        parse_output_template(OUT % ("<OUTFILE_0/>", url), "t", upload_urls=[ours])
    for url in ("http://evil.example/file_upload_handler", "<UPLOAD_URL/>.evil.example", ""):
        with pytest.raises(TemplateError, match="is not this project's upload URL"):
            parse_output_template(OUT % ("<OUTFILE_0/>", url), "t", upload_urls=[ours])
    # an operator's template (upload_urls None) may name any
    parse_output_template(OUT % ("<OUTFILE_0/>", "http://other.example/fuh"), "t")


# ---------------------------------------------------------------------------
# Hostile submissions through the RPC handler: refused, nothing stored.

def _submit(proj, input_template="", output_template="", source="x", name="t0"):
    xml = ("<submit_batch><authenticator>alice_auth</authenticator><batch><app_name>"
           "example_app</app_name><job><name>%s</name>%s%s<input_file><mode>inline</mode>"
           "<source>%s</source></input_file></job></batch></submit_batch>"
           % (name, input_template, output_template, source))
    return proj.rpc(xml)[1]


def _stored(proj):
    return {t: proj.count(t) for t in ("batch", "workunit", "job_file", "batch_file_assoc")}


@pytest.mark.parametrize("name", TRAVERSALS)
def test_submitted_input_template_with_a_path_for_a_name_is_refused(proj, name):
    before = _stored(proj)
    root = _submit(proj, SUBMITTED_IN % ("<name>%s</name>" % name))
    assert root.findtext(".//error_msg") == (
        "job t0: input_template: file_info name '%s': contains '/'" % name)
    assert _stored(proj) == before


@pytest.mark.parametrize("field", ["<name>jf_mine</name>", "<url>http://evil.example/x</url>",
                                   "<physical_name>../../config.xml</physical_name>",
                                   "<physical_name>.htaccess</physical_name>"])
def test_submitted_input_template_setting_server_fields_is_refused(proj, field):
    before = _stored(proj)
    msg = _submit(proj, SUBMITTED_IN % field).findtext(".//error_msg")
    assert msg.startswith("job t0: input_template"), msg
    assert _stored(proj) == before


def test_an_accepted_submission_has_one_name_per_file_info(proj):
    root = _submit(proj, SUBMITTED_IN % "<no_delete/>")
    assert root.findtext("batch_id"), root.findtext(".//error_msg")
    doc = proj.db.query_value("SELECT xml_doc FROM workunit WHERE name = 't0'")
    info = doc.split("<file_info>")[1].split("</file_info>")[0]
    assert info.count("<name>") == 1 and "<name>jf_" in info and "<no_delete/>" in info


@pytest.mark.parametrize("name, url, msg", [
    ("<OUTFILE_0/>", "http://evil.example/file_upload_handler",
     "job t0: output_template line 7: file_info url 'http://evil.example/file_upload_handler' "
     "is not this project's upload URL (use <UPLOAD_URL/>)"),
    ("../../config.xml", "<UPLOAD_URL/>",
     "job t0: output_template: file_info name '../../config.xml': contains '/'"),
])
def test_submitted_output_template_is_checked(proj, name, url, msg):
    before = _stored(proj)
    root = _submit(proj, output_template=OUT % (name, url))
    assert root.findtext(".//error_msg") == msg
    assert _stored(proj) == before
    assert not os.path.isdir(proj.cfg.project_path("templates", "tmp"))


def test_allow_any_upload_url(proj):
    from backend_rows import project_config
    ours = OUT % ("<OUTFILE_0/>", proj.cfg.upload_url)
    assert _submit(proj, output_template=ours, name="u0").findtext("batch_id")
    proj.cfg = project_config(proj.root, allow_any_upload_url=True)
    other = OUT % ("<OUTFILE_0/>", "http://data2.example/file_upload_handler")
    assert _submit(proj, output_template=other, name="u1").findtext("batch_id")


def test_job_file_names_with_a_newline_are_refused(proj):
    from boincpy.submit.job_files import valid_name
    assert not valid_name("abc\n") and valid_name("abc")


# ---------------------------------------------------------------------------
# create_work with a bad template.

def test_create_work_with_a_bad_template(mini_project):
    from test_create_work import _run
    (mini_project / "templates" / "bad_in").write_text(
        SUBMITTED_IN.replace("<number>0</number>", "") % "<physical_name>../../config.xml"
        "</physical_name>")
    status, _, err = _run(mini_project, ["--appname", "example_app", "--wu_name", "w_bad",
                                         "--wu_template", "templates/bad_in"])
    assert status != 0
    assert "file_info physical_name '../../config.xml': contains '/'" in err
    status, _, err = _run(mini_project, ["--appname", "example_app", "--wu_name", "../w",
                                         "in"])
    assert status != 0 and "workunit name '../w': contains '/'" in err
    db = db_of(mini_project)
    try:
        assert db.query_value("SELECT COUNT(*) FROM workunit") == 0
    finally:
        db.close()


# ---------------------------------------------------------------------------
# The file deleter never unlinks outside download/ and upload/.

def test_file_deleter_skips_names_outside_its_directories(mini_project):
    root = str(mini_project)
    db = db_of(mini_project)
    try:
        canaries = {}
        for k, name in enumerate(TRAVERSALS):
            canary = name.replace("config.xml", "canary%d" % k)
            canaries[canary] = os.path.join(root, "canary%d" % k)
            for top in ("download", "upload"):
                # the bucket the name hashes to, so that the path would resolve
                os.makedirs(os.path.join(root, top, bucket(canary, 1024)), exist_ok=True)
        for path in canaries.values():
            with open(path, "w") as f:
                f.write("keep me\n")
        wu_doc = "".join("<file_info>\n    <name>%s</name>\n</file_info>\n" % n
                         for n in canaries) + "<workunit>\n</workunit>\n"
        wu = add_workunit(db, "wu_hostile", app_id(db), need_validate=0, assimilate_state=2,
                          file_delete_state=1, xml_doc=wu_doc)
        rid, _ = add_result(db, root, wu, "wu_hostile_0", file_delete_state=1,
                            xml_doc_in=wu_doc.replace("<workunit>\n</workunit>\n", ""))
        d, _ = run_pass(FileDeleter, root, "--one_pass")
        log = d.log_stream.getvalue()
        for name, path in canaries.items():
            assert os.path.exists(path), name
            assert "[WU#%d] bad file name %r (contains '/'): not deleted" % (wu, name) in log
            assert "[RESULT#%d] bad file name %r (contains '/'): not deleted" % (rid, name) in log
        assert os.path.exists(os.path.join(root, "config.xml"))
    finally:
        db.close()
