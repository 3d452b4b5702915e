"""The reply writer on its own: jobs as job choice hands them over (SentJob)."""

import time
import xml.etree.ElementTree as ET

from boincpy.sched import reply as replies
from boincpy.sched.context import SchedContext, SentJob
from boincpy.sched.handler import read_code_sign_key
from boincpy.sched.hosts import md5_hex
from boincpy.sched.request import ClientAppVersion, ResourceRequest, parse_request
from tests.sched_env import CLIENT, PLATFORM, check_client_needs, fixture_text, sched_env  # noqa


def ctx_for(env, **fields):
    env.add_host(1)
    user = env.row("SELECT * FROM user WHERE id = 1")
    ctx = SchedContext(
        cfg=env.cfg, now=int(time.time()),
        request=parse_request(fixture_text(CLIENT, "cycle", "02_sched_initial_hostid0.body.xml")),
        user=user, host=env.row("SELECT * FROM host WHERE id = 1"),
        email_hash=md5_hex(user["email_addr"]), platforms=[env.platform()],
        code_sign_key=read_code_sign_key(env.cfg), **fields)
    ctx.reply.nucleus_only = False
    return ctx


def sent(env, name, **extra):
    wuid, rid = env.add_job(name, state=4, hostid=1, userid=1, sent_time=int(time.time()))
    job = dict(app=env.app(), workunit=env.row("SELECT * FROM workunit WHERE id = %s", (wuid,)),
               result=env.row("SELECT * FROM result WHERE id = %s", (rid,)),
               app_version=env.app_version(), report_deadline=int(time.time()) + 604800,
               avg_ncpus=1.0, flops=1e9)
    job.update(extra)
    return SentJob(**job)


def parse(text):
    return ET.fromstring(text)


def test_two_jobs_carry_what_the_client_needs(sched_env):
    env = sched_env
    ctx = ctx_for(env)
    ctx.reply.send_code_sign_key = True
    ctx.reply.hostid = 1
    ctx.reply.jobs += [sent(env, "job_a"), sent(env, "job_b")]
    root = parse(replies.write_reply(ctx))
    assert check_client_needs(root, [PLATFORM], expect_key=True) == ["job_a_0", "job_b_0"]
    assert len(root.findall("app")) == 1 and len(root.findall("app_version")) == 1
    assert [w.findtext("name") for w in root.findall("workunit")] == ["job_a", "job_b"]
    wu = root.find("workunit")
    assert wu.findtext("rsc_fpops_est") == "3600000000000.000000"
    assert wu.findtext("command_line").strip() == "-cpu_time 30"
    res = root.find("result")
    assert res.findtext("platform") == PLATFORM and res.findtext("version_num") == "100"
    assert res.findtext("plan_class") == ""


def test_gpu_and_plan_class_usage_in_app_version(sched_env):
    env = sched_env
    ctx = ctx_for(env)
    env.execute("UPDATE app_version SET plan_class = 'cuda'")
    ctx.request.resources.append(ResourceRequest(proc_type=1, count=1, req_secs=10))
    ctx.reply.jobs.append(sent(env, "gpu", plan_class="cuda", coproc_type="NVIDIA",
                               coproc_usage=1.0, gpu_ram=1e9, avg_ncpus=0.1,
                               cmdline="--device 0", flops=5e12))
    root = parse(replies.write_reply(ctx))
    av = root.find("app_version")
    assert av.findtext("plan_class") == "cuda" and av.findtext("avg_ncpus") == "0.100000"
    assert av.find("coproc").findtext("type") == "NVIDIA"
    assert av.find("coproc").findtext("count") == "1.000000"
    assert av.findtext("gpu_ram") == "1000000000.000000"
    assert av.findtext("cmdline") == "--device 0"
    assert root.find("result").findtext("plan_class") == "cuda"


def test_anonymous_platform_job_has_no_app_or_version(sched_env):
    env = sched_env
    ctx = ctx_for(env)
    cav = ClientAppVersion(app_name="example_app", version_num=123, platform=PLATFORM,
                           plan_class="mt")
    ctx.reply.jobs.append(sent(env, "anon", app_version=None, client_app_version=cav))
    root = parse(replies.write_reply(ctx))
    assert root.find("app") is None and root.find("app_version") is None
    res = root.find("result")
    assert (res.findtext("platform"), res.findtext("version_num"), res.findtext("plan_class")) \
        == (PLATFORM, "123", "mt")
    assert root.find("workunit").findtext("name") == "anon"


def test_text_is_escaped_for_the_client(sched_env):
    env = sched_env
    env.execute("UPDATE user SET name = 'a<b & c\u00e9' WHERE id = 1")
    ctx = ctx_for(env)
    ctx.reply.add_message("x < y & z", "notice")
    text = replies.write_reply(ctx)
    assert "<user_name>a&lt;b &amp; c&#195;&#169;</user_name>" in text
    assert '<message priority="notice">x &lt; y &amp; z</message>' in text
    assert parse(text).findtext("user_name") == "a<b & c\u00c3\u00a9"   # bytes as the client reads them


def test_old_clients_get_their_message_priorities(sched_env):
    env = sched_env
    ctx = ctx_for(env)
    ctx.request.core_client_minor_version = 10    # 7.10.x would be fine; use 6.10
    ctx.request.core_client_major_version = 6
    ctx.reply.add_message("hello", "notice")
    assert '<message priority="high">hello</message>' in replies.write_reply(ctx)


def test_no_rsc_apps_only_for_resources_the_client_has(sched_env):
    env = sched_env

    class Array:
        have_apps_for_proc_type = [True, False, True, False, False]
    ctx = ctx_for(env)
    text = replies.write_reply(ctx, Array())
    assert "<no_rsc_apps>" not in text              # the client has no GPU
    ctx.request.resources.append(ResourceRequest(proc_type=1, count=1))
    text = replies.write_reply(ctx, Array())
    assert "<no_rsc_apps>NVIDIA</no_rsc_apps>" in text and "CPU</no_rsc_apps>" not in text


def test_down_reply_is_what_boinc_sends():
    assert replies.down_reply("Server error: feeder not running", 3600.0) == (
        b"Content-type: text/plain\n\n<scheduler_reply>\n"
        b"    <message priority=\"low\">Server error: feeder not running</message>\n"
        b"    <request_delay>3600</request_delay>\n    <project_is_down/>\n"
        b"</scheduler_reply>\n")
