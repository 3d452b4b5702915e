"""Input/output template processing against BOINC's exact text formats."""

import hashlib
import os
import re

import pytest

from boincpy.config import load_config, write_config
from boincpy.errors import TemplateError
from boincpy.files import bucket, dir_hier_path
from boincpy.templates import (InputFile, FileInfoCache, parse_input_template,
                               parse_output_template, parse_xml, process_input_template,
                               process_result_template, read_md5_info,
                               workunit_values, check_workunit_values)

DL_URL = "http://127.0.0.1:8080/tp/download"
UL_URL = "http://127.0.0.1:8080/tp_cgi/file_upload_handler"

TWO_FILES = """<input_template>
    <file_info>
        <number>0</number>
        <sticky/>
    </file_info>
    <file_info>
        <number>1</number>
        <no_delete/>
        <gzip/>
    </file_info>
    <workunit>
        <file_ref>
            <file_number>0</file_number>
            <open_name>in</open_name>
        </file_ref>
        <file_ref>
            <file_number>1</file_number>
            <open_name>data</open_name>
            <copy_file/>
        </file_ref>
        <rsc_fpops_est>1e10</rsc_fpops_est>
        <rsc_memory_bound>1e8</rsc_memory_bound>
        <delay_bound>3600</delay_bound>
        <target_nresults>3</target_nresults>
        <min_quorum>2</min_quorum>
        <batch>7</batch>
        <size_class>1</size_class>
        <credit>12.5</credit>
    </workunit>
</input_template>
"""

OUT_TEMPLATE = """<output_template>
    <file_info>
        <name><OUTFILE_0/></name>
        <generated_locally/>
        <upload_when_present/>
        <max_nbytes>5000000</max_nbytes>
        <url><UPLOAD_URL/></url>
    </file_info>
    <file_info>
        <name><OUTFILE_1/></name>
        <generated_locally/>
        <upload_when_present/>
        <max_nbytes>1e6</max_nbytes>
        <url><UPLOAD_URL/></url>
    </file_info>
    <result>
        <file_ref>
            <file_name><OUTFILE_0/></file_name>
            <open_name>out</open_name>
        </file_ref>
        <file_ref>
            <file_name><OUTFILE_1/></file_name>
            <open_name>log</open_name>
            <optional/>
        </file_ref>
    </result>
</output_template>
"""


@pytest.fixture
def cfg(tmp_path):
    """A minimal project directory with a config.xml (no database needed here)."""
    proj = tmp_path / "proj"
    (proj / "download").mkdir(parents=True)
    (proj / "keys").mkdir()
    write_config(str(proj / "config.xml"), {
        "db_name": "unused", "download_url": DL_URL, "upload_url": UL_URL,
        "uldl_dir_fanout": 1024, "cache_md5_info": True,
        "dont_generate_upload_certificates": True, "ignore_upload_certificates": True,
    })
    return load_config(str(proj))


def stage(cfg, name, data, gz=None):
    path = dir_hier_path(cfg.download_dir, name, cfg.uldl_dir_fanout, create=True)
    with open(path, "wb") as f:
        f.write(data)
    if gz is not None:
        with open(path + ".gz", "wb") as f:
            f.write(gz)
    return path


def test_two_file_xml_doc_byte_exact(cfg):
    stage(cfg, "input_0", b"hello\n")
    stage(cfg, "job_file.dat", b"x" * 1000, gz=b"G" * 17)
    t = parse_input_template(TWO_FILES, "templates/app_in")
    doc = process_input_template(t, ["input_0", "job_file.dat"], cfg, "-n 5")
    md5a = hashlib.md5(b"hello\n").hexdigest()
    md5b = hashlib.md5(b"x" * 1000).hexdigest()
    assert bucket("input_0", 1024) == "93" and bucket("job_file.dat", 1024) == "161"
    expected = (
        "<file_info>\n"
        "<sticky/>\n"
        "    <name>input_0</name>\n"
        "    <url>" + DL_URL + "/93/input_0</url>\n"
        "    <md5_cksum>" + md5a + "</md5_cksum>\n"
        "    <nbytes>6</nbytes>\n"
        "</file_info>\n"
        "<file_info>\n"
        "<no_delete/>\n"
        "    <name>job_file.dat</name>\n"
        "    <url>" + DL_URL + "/161/job_file.dat</url>\n"
        "    <gzipped_url>" + DL_URL + "/161/job_file.dat.gz</gzipped_url>\n"
        "    <gzipped_nbytes>17</gzipped_nbytes>\n"
        "    <md5_cksum>" + md5b + "</md5_cksum>\n"
        "    <nbytes>1000</nbytes>\n"
        "</file_info>\n"
        "<workunit>\n"
        "<command_line>\n-n 5\n</command_line>\n"
        "<file_ref>\n"
        "    <file_name>input_0</file_name>\n"
        "    <open_name>in</open_name>\n"
        "</file_ref>\n"
        "<file_ref>\n"
        "    <file_name>job_file.dat</file_name>\n"
        "    <open_name>data</open_name>\n"
        "    <copy_file/>\n"
        "</file_ref>\n"
        "<credit>12.5</credit>\n"
        "</workunit>"
    )
    assert doc == expected
    # template values become columns (and override options); max_* raised to target
    values = workunit_values(t, {"rsc_fpops_est": 5.0, "rsc_disk_bound": 2e9, "min_quorum": 1})
    assert values["rsc_fpops_est"] == 1e10 and values["rsc_disk_bound"] == 2e9
    assert values["min_quorum"] == 2 and values["target_nresults"] == 3
    assert values["max_success_results"] == 3 and values["max_total_results"] == 3
    assert t.values["batch"] == 7 and t.values["size_class"] == 1
    # the md5 cache was written in create_work's format
    md5path = dir_hier_path(cfg.download_dir, "input_0", 1024) + ".md5"
    assert open(md5path).read() == md5a + " 6.000000000000000e+00\n"
    assert read_md5_info(md5path[:-4]) == (md5a, 6.0)


def test_template_reused_for_many_jobs(cfg):
    t = parse_input_template(TWO_FILES, "t")
    cache = FileInfoCache(cfg)
    for i in range(3):
        stage(cfg, "a%d" % i, b"a%d" % i)
    stage(cfg, "shared", b"s", gz=b"z")
    docs = [process_input_template(t, ["a%d" % i, "shared"], cfg, "", cache=cache)
            for i in range(3)]
    assert len(set(docs)) == 3
    assert all("<command_line>\n\n</command_line>\n" in d for d in docs)


def test_top_level_file_is_copied_into_hierarchy(cfg, capsys):
    with open(os.path.join(cfg.download_dir, "toplevel"), "wb") as f:
        f.write(b"abc")
    t = parse_input_template(
        "<input_template><file_info></file_info><workunit><file_ref>"
        "<open_name>in</open_name></file_ref></workunit></input_template>", "t")
    doc = process_input_template(t, ["toplevel"], cfg, "")
    assert os.path.exists(dir_hier_path(cfg.download_dir, "toplevel", 1024))
    assert "<nbytes>3</nbytes>" in doc
    assert "copy " in capsys.readouterr().out


def test_remote_file_and_constant_file(cfg):
    path = stage(cfg, "const.dat", b"constant data")
    md5c = hashlib.md5(b"constant data").hexdigest()
    text = """<input_template>
  <file_info>
    <physical_name>const.dat</physical_name>
  </file_info>
  <file_info>
    <number>1</number>
  </file_info>
  <workunit>
    <file_ref><open_name>c</open_name></file_ref>
    <file_ref><file_number>1</file_number><open_name>r</open_name></file_ref>
  </workunit>
</input_template>"""
    t = parse_input_template(text, "t_in")
    assert t.n_var_files == 1 and t.n_file_infos == 2
    remote = InputFile(is_remote=True, url="http://elsewhere/x.bin", nbytes=1234.0,
                       md5="0123456789abcdef0123456789abcdef")
    # constant files need their .md5 file
    with pytest.raises(TemplateError, match="missing MD5 info file for const.dat"):
        process_input_template(t, [remote], cfg, "")
    with open(path + ".md5", "w") as f:
        f.write("%s 13\n" % md5c)
    doc = process_input_template(t, [remote], cfg, "")
    assert doc == (
        "<file_info>\n"
        "    <name>const.dat</name>\n"
        "    <url>" + DL_URL + "/" + bucket("const.dat", 1024) + "/const.dat</url>\n"
        "    <md5_cksum>" + md5c + "</md5_cksum>\n"
        "    <nbytes>13</nbytes>\n"
        "</file_info>\n"
        "<file_info>\n"
        "    <name>jf_0123456789abcdef0123456789abcdef</name>\n"
        "    <url>http://elsewhere/x.bin</url>\n"
        "    <md5_cksum>0123456789abcdef0123456789abcdef</md5_cksum>\n"
        "    <nbytes>1234</nbytes>\n"
        "</file_info>\n"
        "<workunit>\n<command_line>\n\n</command_line>\n"
        "<file_ref>\n    <file_name>const.dat</file_name>\n    <open_name>c</open_name>\n"
        "</file_ref>\n"
        "<file_ref>\n    <file_name>jf_0123456789abcdef0123456789abcdef</file_name>\n"
        "    <open_name>r</open_name>\n</file_ref>\n"
        "</workunit>")


def test_remote_file_described_in_template(cfg):
    text = """<input_template>
<file_info>
  <url>http://mirror1/files/</url>
  <url>http://mirror2/files/</url>
  <md5_cksum>abc</md5_cksum>
  <nbytes>100</nbytes>
</file_info>
<workunit><file_ref><copy_file/></file_ref></workunit>
</input_template>"""
    t = parse_input_template(text, "t")
    doc = process_input_template(t, ["big.bin"], cfg, None)
    assert doc == (
        "<file_info>\n"
        "    <name>big.bin</name>\n"
        "    <url>http://mirror1/files/big.bin</url>\n"
        "    <url>http://mirror2/files/big.bin</url>\n"
        "    <md5_cksum>abc</md5_cksum>\n"
        "    <nbytes>100</nbytes>\n"
        "</file_info>\n"
        "<workunit>\n"
        "<file_ref>\n    <file_name>big.bin</file_name>\n    <copy_file/>\n"
        "    <open_name>big.bin</open_name>\n</file_ref>\n"
        "</workunit>")


def test_template_command_line_and_sub_appname(cfg):
    stage(cfg, "f", b"f")
    text = ("<input_template><file_info></file_info><workunit><file_ref><open_name>in</open_name>"
            "</file_ref><command_line>-t 1</command_line><rsc_fpops_est>1e9</rsc_fpops_est>"
            "</workunit></input_template>")
    t = parse_input_template(text, "templates/x_in")
    doc = process_input_template(t, ["f"], cfg, "", "   <sub_appname>S</sub_appname>")
    assert doc.endswith("<workunit>\n<command_line>\n\n</command_line>\n<file_ref>\n"
                        "    <file_name>f</file_name>\n    <open_name>in</open_name>\n"
                        "</file_ref>\n<command_line>\n-t 1\n</command_line>\n"
                        "   <sub_appname>S</sub_appname>\n</workunit>")
    with pytest.raises(TemplateError, match="templates/x_in.*command line"):
        process_input_template(t, ["f"], cfg, "-x")


@pytest.mark.parametrize("text,message", [
    ("<input_template>\n<file_info>\n</file_info>\n<workunit>\n</workunit>\n"
     "</input_template>", r"bad\.xml line 4: #file refs != #file infos"),
    ("<input_template>\n<workunit>\n<file_ref><open_name>a</open_name></file_ref>\n"
     "</workunit>\n</input_template>", r"bad\.xml line 3: too many <file_ref>s"),
    ("<input_template>\n<file_info></file_info>\n<workunit>\n<file_ref>\n<file_number>0</file_number>\n"
     "</file_ref>\n</workunit>\n</input_template>",
     r"bad\.xml line 4: <file_ref> has no <open_name> and no <copy_file/>"),
    ("<input_template>\n<file_info>\n<workunit>\n</workunit>\n</input_template>",
     r"bad\.xml line 5: end tag </input_template> does not match <file_info> \(line 2\)"),
    ("<input_template>\n  <workunit>\n    <rsc_fpops_est>1e9</rsc_fpops_bound>\n",
     r"bad\.xml line 3: end tag </rsc_fpops_bound> does not match <rsc_fpops_est>"),
    ("<input_template>\n<workunit>\n<delay_bound>soon</delay_bound>\n</workunit>\n"
     "</input_template>", r"bad\.xml line 3: <delay_bound>: 'soon' is not a number"),
    ("<input_template>\n<file_info/>\n</input_template>", r"bad\.xml: .*no <workunit>"),
    ("<input_template>\n<workunit>\n<x>\n</workunit>", r"bad\.xml line 4: end tag"),
    ("<input_template><workunit></workunit>", r"bad\.xml line 1: <input_template> is never"),
])
def test_input_template_errors(text, message):
    with pytest.raises(TemplateError, match=message):
        parse_input_template(text, "bad.xml")


def test_input_file_count_mismatch(cfg):
    t = parse_input_template(TWO_FILES, "templates/app_in")
    with pytest.raises(TemplateError, match="templates/app_in: 1 input files given, but "
                                            "template has 2"):
        process_input_template(t, ["a"], cfg, "")
    with pytest.raises(TemplateError, match="3 input files given, but template has 2"):
        process_input_template(t, ["a", "b", "c"], cfg, "")


def test_missing_input_file(cfg):
    t = parse_input_template(TWO_FILES, "t")
    with pytest.raises(TemplateError, match="input file nosuch not found"):
        process_input_template(t, ["nosuch", "b"], cfg, "")


def test_missing_gzip_file(cfg):
    stage(cfg, "a", b"a")
    stage(cfg, "b", b"b")
    t = parse_input_template(TWO_FILES, "t")
    with pytest.raises(TemplateError, match=r"missing gzip file .*b\.gz"):
        process_input_template(t, ["a", "b"], cfg, "")


def test_workunit_value_checks():
    t = parse_input_template("<input_template><workunit><max_total_results>2"
                             "</max_total_results><max_error_results>3</max_error_results>"
                             "</workunit></input_template>", "t")
    with pytest.raises(TemplateError, match="max_error_results > max_total_results"):
        check_workunit_values(workunit_values(t), "t")
    with pytest.raises(TemplateError, match="no rsc_fpops_est given"):
        check_workunit_values(workunit_values(t, {"rsc_fpops_est": 0.0,
                                                  "max_error_results": 1}))
    with pytest.raises(TemplateError, match="no <workunit>"):
        # <workunit/> is not a workunit element for BOINC either
        parse_input_template("<input_template><workunit/></input_template>", "t")
    check_workunit_values(workunit_values(
        parse_input_template("<workunit></workunit>", "t")))


# ---------------------------------------------------------------------------
# output templates

def test_output_template_ok():
    o = parse_output_template(OUT_TEMPLATE, "templates/app_out")
    assert o.files == [("<OUTFILE_0/>", 5e6), ("<OUTFILE_1/>", 1e6)]
    assert o.file_refs == [("<OUTFILE_0/>", "out"), ("<OUTFILE_1/>", "log")]


@pytest.mark.parametrize("mutate,message", [
    (lambda s: s.replace("        <max_nbytes>5000000</max_nbytes>\n", ""),
     r"app_out line 2: <file_info> has no <max_nbytes>"),
    (lambda s: s.replace("<name><OUTFILE_1/></name>", ""),
     r"app_out line 9: <file_info> has no <name>"),
    (lambda s: s.replace("<result>\n", "<result>  <report_immediately/>\n"),
     r"app_out line 16: <result> must be followed by a newline"),
    (lambda s: s.replace("<result>\n", "<result>\r\n"),
     r"<result> must be followed by a newline"),
    (lambda s: s.split("    <result>")[0] + "</output_template>\n",
     r"app_out: no <result> element"),
    (lambda s: s.replace("</result>", "</resultx>"),
     r"app_out line 26: end tag </resultx> does not match <result> \(line 16\)"),
    (lambda s: s.replace("    <file_info>\n        <name><OUTFILE_1",
                         "    <file_info>  <name><OUTFILE_1"),
     r"app_out line 9: <file_info> must be followed by a newline"),
])
def test_output_template_errors(mutate, message):
    with pytest.raises(TemplateError, match=message):
        parse_output_template(mutate(OUT_TEMPLATE), "templates/app_out")


def test_output_template_newline_check_optional():
    text = OUT_TEMPLATE.replace("<file_info>\n        <name><OUTFILE_1",
                                "<file_info> <name><OUTFILE_1")
    parse_output_template(text, "t", check_file_info_newline=False)


def test_process_result_template_without_certificates(cfg):
    assert cfg.dont_generate_upload_certificates
    doc = process_result_template(OUT_TEMPLATE, "wu_12_0", cfg, rand=1804289383)
    assert doc.startswith("<file_info>\n        <name>wu_12_0_r1804289383_0</name>\n")
    assert "<name>wu_12_0_r1804289383_1</name>" in doc
    assert "<file_name>wu_12_0_r1804289383_1</file_name>" in doc
    assert "<url>" + UL_URL + "</url>" in doc
    assert "output_template" not in doc and "OUTFILE" not in doc and "UPLOAD_URL" not in doc
    assert doc.endswith("</result>")
    assert "<result>\n" in doc
    # random part differs between results when not given
    a = process_result_template(OUT_TEMPLATE, "w_0", cfg)
    assert re.search(r"<name>w_0_r\d+_0</name>", a)


def test_result_template_bad_macro(cfg):
    with pytest.raises(TemplateError, match="OUTFILE"):
        process_result_template("<name><OUTFILE_0></name>", "r", cfg, rand=1)


def test_process_result_template_with_upload_certificates(cfg):
    crypto = pytest.importorskip("boincpy.crypto")
    keydir = cfg.key_dir
    crypto.generate_key_pair(os.path.join(keydir, "upload_private"),
                             os.path.join(keydir, "upload_public"))
    cfg.__dict__["dont_generate_upload_certificates"] = False
    doc = process_result_template(OUT_TEMPLATE, "wu_5_1", cfg, rand=42)
    public = crypto.read_key(os.path.join(keydir, "upload_public"))
    parts = doc.split("<xml_signature>\n")
    assert len(parts) == 3
    for k, (name, max_nbytes) in enumerate([("wu_5_1_r42_0", 5e6), ("wu_5_1_r42_1", 1e6)]):
        sig = parts[k + 1].split("</xml_signature>\n")[0]
        assert sig.endswith(".\n") and len(sig) == 262
        text = "<name>%s</name><max_nbytes>%.0f</max_nbytes>" % (name, max_nbytes)
        assert crypto.upload_certificate_text(name, max_nbytes) == text
        assert crypto.verify_string(text, sig, public)
        assert not crypto.verify_string(text.replace("r42", "r43"), sig, public)
    # as in BOINC's add_signatures: right before </file_info>, after its indentation
    assert "</url>\n    <xml_signature>\n" in doc
    assert "</xml_signature>\n</file_info>" in doc
    # an explicit key is used as given
    private = crypto.read_key(os.path.join(keydir, "upload_private"))
    assert process_result_template(OUT_TEMPLATE, "wu_5_1", cfg, private, rand=42) == doc


def test_line_numbers_of_a_large_template_are_exact():
    """Each element's line, and an error's, counted from where the last one
    was (the scan moves forward): a template of 32,000 elements, its last
    ones and an unbalanced end named at their lines."""
    body = "".join("<x%d>%d</x%d>\n" % (i % 7, i, i % 7) for i in range(32000))
    root = parse_xml("<input_template>\n" + body + "</input_template>\n", "big.xml")
    elements = root.children[0].children
    assert [e.line for e in elements[:3]] == [2, 3, 4]
    assert elements[-1].line == 32001 and elements[-1].raw_text() == "31999"
    text = ("<input_template>\n" + body + "<a>\n<b>\n</a>\n</input_template>\n")
    with pytest.raises(TemplateError,
                       match=r"big\.xml line 32004: end tag </a> does not match <b> \(line 32003\)"):
        parse_xml(text, "big.xml")
