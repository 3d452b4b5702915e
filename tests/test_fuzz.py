"""Generated hostile input (hypothesis): mutated captured client requests and
random values fed to the scheduler request parser and the whole handler, the
upload handler, templates, config.xml, plan_class_spec.xml and every account
web RPC.

The property: the answer is a well-formed reply (or the parser's own error
class), no other exception escapes, no traceback is logged, and the next
normal request is still served.  Example counts are set per test and the
examples are derandomized (the same every run), which keeps the suite to
seconds in CI; ``BOINCPY_FUZZ_EXAMPLES=N`` runs N fresh random examples of
each instead (a longer search, by hand).
"""

import glob
import io
import os
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from boincpy import upload
from boincpy.config import load_config, parse_config_text
from boincpy.errors import BoincpyError
from boincpy.log import MessageLog, SchedLog
from boincpy.sched.handler import handle_request
from boincpy.sched.plan_class import PlanClassSpecError, parse_specs
from boincpy.sched.request import RequestError, parse_request
from boincpy.templates import parse_xml
from boincpy.web import rpc
from boincpy.web.http import Request
from tests.sched_env import CLIENT, REFERENCE, fixture_text, sched_env  # noqa: F401

SCALE = int(os.environ.get("BOINCPY_FUZZ_EXAMPLES") or 0)


def examples(n):
    return settings(max_examples=SCALE or n, deadline=None, derandomize=not SCALE,
                    suppress_health_check=list(HealthCheck))


REQUESTS = sorted(
    p for p in glob.glob(os.path.join(CLIENT, "*", "*.body.xml"))
    + glob.glob(os.path.join(REFERENCE, "sched", "*.request.xml"))
    if b"<scheduler_request>" in open(p, "rb").read())
UPLOADS = sorted(p for p in glob.glob(os.path.join(CLIENT, "*", "*upload*.body.xml")))

# values a hostile client puts where a number or a name belongs
HOSTILE = [
    "", "-1", "0", "2147483648", "99999999999999999999999", "-99999999999999999999", "1e999",
    "-1e999", "inf", "-inf", "nan", "NaN", "1e308", "4.9e-324", "0x7fffffff", "0x", "08",
    " 12 ", "1_000", "\u0661\u0662", "<x>", "</scheduler_request>", "&", "&amp;", "&#0;",
    "&#300;", "&unknown;", "]]>", "<![CDATA[x]]>", "<!-- c -->", "\x00", "\x07\x1b", "'\"",
    "../../etc/passwd", "/abs/path", "a" * 300, "\u00e9" * 200, "x" * 70000,
    "</name></result_ack><result_abort><name>v</name></result_abort><result_ack><name>",
]
hostile_value = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=40),
                          st.integers().map(str), st.floats().map(repr))


@st.composite
def mutated(draw, sources):
    """A captured request with a few mutations: an element's text replaced by
    a hostile value, a span deleted, duplicated or cut off, bytes inserted."""
    data = fixture_text(draw(st.sampled_from(sources)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(("text", "text", "text", "delete", "dup", "cut", "bytes")))
        n = len(data)
        if op == "text":
            tags = re.findall(rb"<(\w+)>[^<]*</\1>", data)
            if not tags:
                continue
            tag = draw(st.sampled_from(tags))
            value = draw(hostile_value).encode("utf-8", "surrogatepass")
            data = re.sub(rb"<%s>[^<]*</%s>" % (tag, tag),
                          lambda m: b"<%s>%s</%s>" % (tag, value, tag), data, count=1)
        elif op == "delete":
            i = draw(st.integers(0, n))
            data = data[:i] + data[i + draw(st.integers(0, 200)):]
        elif op == "dup":
            i = draw(st.integers(0, n))
            data = data[:i] + data[i:i + draw(st.integers(0, 2000))] * 2 + data[i:]
        elif op == "cut":
            data = data[:draw(st.integers(0, n))]
        else:
            i = draw(st.integers(0, n))
            data = data[:i] + draw(st.binary(max_size=30)) + data[i:]
    return data


# -- the scheduler ------------------------------------------------------------------

@examples(300)
@given(mutated(REQUESTS))
def test_request_parser_reads_or_refuses_but_never_crashes(data):
    try:
        req = parse_request(data)
    except RequestError as exc:
        assert exc.line >= 0
        return
    for r in req.results:
        assert isinstance(r.name, str)


def _sched(env, data):
    log = SchedLog(io.StringIO(), 3)
    out = handle_request(env.cfg, data, {"REMOTE_ADDR": "192.0.2.7", "REQUEST_METHOD": "POST"},
                         job_array=env.job_array(), log=log)
    text = log.stream.getvalue()
    assert "Traceback" not in text and "Scheduler failed" not in text, text[-3000:]
    header, _, xml = out.decode("utf-8").partition("\n\n")
    assert header == "Content-type: text/xml"
    root = ET.fromstring(xml)
    assert root.tag == "scheduler_reply"
    return root


def test_whole_handler_answers_mutated_requests(sched_env):
    """Mutated requests through the whole handler (database, host records,
    reports, job choice); after each, the captured client's normal work fetch
    still gets a normal reply."""
    env = sched_env
    env.add_job("fz1")
    normal = fixture_text(CLIENT, "no_work", "03_sched_workfetch_hostid1.body.xml")
    normal = re.sub(rb"<code_sign_key>.*?</code_sign_key>\n?", b"", normal, flags=re.S)
    _sched(env, fixture_text(CLIENT, "cycle", "02_sched_initial_hostid0.body.xml"))
    seqno = [10]

    @examples(60)
    @given(mutated(REQUESTS))
    def run(data):
        _sched(env, data)
        seqno[0] += 1
        root = _sched(env, re.sub(rb"<rpc_seqno>\d+</rpc_seqno>",
                                  b"<rpc_seqno>%d</rpc_seqno>" % seqno[0], normal))
        assert "Server error" not in "".join(m.text or "" for m in root.findall("message"))
    run()
    assert seqno[0] >= 10 + 30, "only %d examples ran" % (seqno[0] - 10)


# -- the upload handler ---------------------------------------------------------------

@pytest.fixture
def upload_cfg(mini_project):
    cfg = load_config(str(mini_project))
    cfg.__dict__.update(ignore_upload_certificates=True)
    return cfg


def test_upload_handler_answers_mutated_uploads(upload_cfg):
    cfg = upload_cfg

    @examples(150)
    @given(mutated(UPLOADS))
    def run(body):
        log = MessageLog(io.StringIO(), 3)
        before = _files(cfg.upload_dir)
        reply = upload.handle_request(cfg, io.BytesIO(body), len(body), log)
        assert "Traceback" not in log.stream.getvalue()
        root = ET.fromstring(reply.split("\n\n", 1)[1])
        status = int(root.findtext("status"))
        assert status in (0, 1, -1)
        after = _files(cfg.upload_dir)
        for path in after - before:
            # only a completed upload or a partial one kept for resuming
            assert status == 0 or path.endswith(".part"), (status, path)
            assert os.path.realpath(path).startswith(os.path.realpath(cfg.upload_dir))
        if status == -1:
            assert after == before
    run()


def _files(top):
    return {os.path.join(d, f) for d, _, files in os.walk(top) for f in files}


# -- templates, config.xml, plan_class_spec.xml ---------------------------------------

TEMPLATE = (b"<input_template>\n<file_info>\n<number>0</number>\n</file_info>\n<workunit>\n"
            b"<file_ref>\n<file_number>0</file_number>\n<open_name>in</open_name>\n"
            b"</file_ref>\n<rsc_fpops_est>1e12</rsc_fpops_est>\n"
            b"<target_nresults>2</target_nresults>\n</workunit>\n</input_template>\n")
SPECS = (b"<plan_classes>\n<plan_class>\n<name>mt</name>\n<min_ncpus>2</min_ncpus>\n"
         b"<max_threads>8</max_threads>\n<projected_flops_scale>1.1</projected_flops_scale>\n"
         b"<min_os_version>1.5</min_os_version>\n<cuda/>\n<min_gpu_ram_mb>256</min_gpu_ram_mb>\n"
         b"</plan_class>\n</plan_classes>\n")


@st.composite
def mutated_text(draw, base):
    data = base
    for _ in range(draw(st.integers(1, 4))):
        tags = re.findall(rb"<(\w+)>[^<]*</\1>", data)
        i = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(("text", "text", "delete", "bytes", "deep")))
        if op == "text" and tags:
            tag = draw(st.sampled_from(tags))
            value = draw(hostile_value).encode("utf-8", "surrogatepass")
            data = re.sub(rb"<%s>[^<]*</%s>" % (tag, tag),
                          lambda m: b"<%s>%s</%s>" % (tag, value, tag), data, count=1)
        elif op == "delete":
            data = data[:i] + data[i + draw(st.integers(0, 50)):]
        elif op == "deep":
            depth = draw(st.integers(1, 3000))
            data = data[:i] + b"<d>" * depth + b"</d>" * depth + data[i:]
        else:
            data = data[:i] + draw(st.binary(max_size=20)) + data[i:]
    return data


@examples(200)
@given(mutated_text(TEMPLATE))
def test_template_reader_reads_or_refuses(data):
    try:
        parse_xml(data.decode("utf-8", "replace"), "in_template")
    except BoincpyError:
        pass


@examples(200)
@given(mutated_text(SPECS))
def test_plan_class_spec_reads_or_refuses(data):
    try:
        specs = parse_specs(data.decode("utf-8", "replace"))
    except (PlanClassSpecError, BoincpyError):
        return
    for spec in specs.values() if isinstance(specs, dict) else specs:
        for value in vars(spec).values():
            if isinstance(value, float):
                assert value == value and value not in (float("inf"), float("-inf"))


def test_config_reader_reads_or_refuses(mini_project):
    base = (mini_project / "config.xml").read_bytes()

    @examples(150)
    @given(mutated_text(base))
    def run(data):
        try:
            parse_config_text(data, str(mini_project))
        except BoincpyError:
            pass
    run()


# -- the account web RPCs ---------------------------------------------------------------

RPC_PARAMS = {
    "get_project_config": (),
    "create_account": ("email_addr", "passwd_hash", "user_name", "team_name", "invite_code",
                       "consent_flag", "source"),
    "lookup_account": ("email_addr", "passwd_hash"),
    "am_get_info": ("account_key",),
    "am_set_info": ("account_key", "name", "country", "postal_code", "global_prefs",
                    "project_prefs", "url", "send_email", "show_hosts", "teamid", "venue",
                    "email_addr", "password_hash"),
    "show_user": ("userid", "auth", "format"),
    "team_lookup": ("team_id", "team_ids", "team_name", "format"),
    "create_team": ("account_key", "name", "url", "type", "name_html", "description",
                    "country"),
}


def test_every_web_rpc_answers_hostile_parameters(mini_project):
    cfg = load_config(str(mini_project))
    cfg.__dict__.update(enable_am_set_info_rpc=True, enable_create_team_rpc=True)

    @examples(40)
    @given(st.sampled_from(sorted(RPC_PARAMS)), st.data())
    def run(name, data):
        params = {p: data.draw(hostile_value) for p in RPC_PARAMS[name]
                  if data.draw(st.booleans())}
        method = data.draw(st.sampled_from(("GET", "POST")))
        req = Request.of(method=method, get=params if method == "GET" else {},
                         post=params if method == "POST" else {},
                         environ={"REMOTE_ADDR": "192.0.2.%d" % data.draw(st.integers(1, 254))})
        resp = rpc.handle(name, cfg, req)
        assert not resp.status.startswith("5"), resp.body
        if resp.content_type.startswith("text/xml"):
            ET.fromstring(resp.body.split("?>", 1)[-1])
    run()
    # the normal request is still served
    resp = rpc.handle("get_project_config", cfg, Request.of(environ={"REMOTE_ADDR": "1.2.3.4"}))
    assert "<project_config>" in resp.body
