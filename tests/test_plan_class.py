"""App-version plan classes: plan_class_spec.xml, BOINC's built-in classes over
synthetic hosts, and version choice through the real request handler."""

import io
import os
import time
import xml.etree.ElementTree as ET

import pytest

from boincpy import shmem
from boincpy.log import SchedLog
from boincpy.sched import plan_class as pc
from boincpy.sched.handler import handle_request
from boincpy.sched.request import parse_request
from jobs_helpers import make_feeder
from tests.sched_env import (APP_VERSION_XML, CLIENT, PLATFORM, fixture_text,  # noqa: F401
                             sched_env)

MB = 1024.0 * 1024.0

# ---------------------------------------------------------------------------
# the client's <coprocs>, as lib/coproc.cpp write_xml(scheduler_rpc=true) writes it


def coproc_cuda(cc=(5, 2), cuda=11040, drv=47014, ram=4096 * MB, peak=5e12, opencl=None,
                req_secs=86400.0):
    ocl = ""
    if opencl:
        ocl = ("   <coproc_opencl>\n      <name>GeForce</name>\n"
               "      <global_mem_size>%d</global_mem_size>\n"
               "      <opencl_device_version>%s</opencl_device_version>\n"
               "   </coproc_opencl>\n" % (ram, opencl))
    return ("<coproc_cuda>\n   <count>1</count>\n   <name>GeForce GTX 970</name>\n"
            "   <available_ram>%f</available_ram>\n   <have_cuda>1</have_cuda>\n"
            "   <have_opencl>%d</have_opencl>\n   <req_secs>%f</req_secs>\n"
            "   <req_instances>0.000000</req_instances>\n"
            "   <estimated_delay>0.000000</estimated_delay>\n"
            "   <peak_flops>%f</peak_flops>\n   <cudaVersion>%d</cudaVersion>\n"
            "   <drvVersion>%d</drvVersion>\n   <totalGlobalMem>%f</totalGlobalMem>\n"
            "   <major>%d</major>\n   <minor>%d</minor>\n"
            "   <multiProcessorCount>13</multiProcessorCount>\n%s</coproc_cuda>\n"
            % (ram, 1 if opencl else 0, req_secs, peak, cuda, drv, ram, cc[0], cc[1], ocl))


def coproc_ati(cal="1.4.1848", atirt=True, amdrt=False, ram=2048 * MB, peak=2e12):
    return ("<coproc_ati>\n   <count>1</count>\n   <name>ATI Radeon HD 5800</name>\n"
            "   <available_ram>%f</available_ram>\n   <have_cal>1</have_cal>\n"
            "   <have_opencl>0</have_opencl>\n   <req_secs>100.0</req_secs>\n"
            "   <peak_flops>%f</peak_flops>\n   <CALVersion>%s</CALVersion>\n"
            "   <target>8</target>\n%s%s</coproc_ati>\n"
            % (ram, peak, cal, "    <atirt_detected/>\n" if atirt else "",
               "    <amdrt_detected/>\n" if amdrt else ""))


def coproc_intel(ocl="OpenCL 1.2 ", ram=1024 * MB, peak=4e11):
    return ("<coproc_intel_gpu>\n   <count>1</count>\n   <name>HD Graphics 630</name>\n"
            "   <available_ram>%f</available_ram>\n   <have_opencl>1</have_opencl>\n"
            "   <req_secs>100.0</req_secs>\n   <peak_flops>%f</peak_flops>\n"
            "   <coproc_opencl>\n      <global_mem_size>%d</global_mem_size>\n"
            "      <opencl_device_version>%s</opencl_device_version>\n"
            "   </coproc_opencl>\n</coproc_intel_gpu>\n" % (ram, peak, ram, ocl))


def request_with(ncpus=2, coprocs=(), features=None, vbox="", os_version=None,
                 extra_host=""):
    """The captured 7.20.5 client's first request, changed to describe another host."""
    text = fixture_text(CLIENT, "cycle", "02_sched_initial_hostid0.body.xml").decode()
    text = text.replace("<p_ncpus>2</p_ncpus>", "<p_ncpus>%d</p_ncpus>" % ncpus)
    if features is not None:
        start = text.index("<p_features>") + len("<p_features>")
        text = text[:start] + features + text[text.index("</p_features>"):]
    if os_version is not None:
        start = text.index("<os_version>") + len("<os_version>")
        text = text[:start] + os_version + text[text.index("</os_version>"):]
    add = extra_host
    if vbox:
        add += "    <virtualbox_version>%s</virtualbox_version>\n" % vbox
    text = text.replace("</host_info>\n", add + "</host_info>\n", 1)
    if coprocs:
        text = text.replace("</host_info>\n", "</host_info>\n<coprocs>\n%s</coprocs>\n"
                            % "".join(coprocs), 1)
    return text.encode()


def plan_host(ncpus=2, coprocs=(), usable_ram=8e9, fpops=1e9, platform=PLATFORM, **kw):
    req = parse_request(request_with(ncpus, coprocs, **kw))
    req.host.p_fpops = fpops
    return pc.PlanHost(req.host, req.resources, req.core_client_version,
                       req.core_client_major_version, 1, ncpus, usable_ram, fpops, platform)


# ---------------------------------------------------------------------------
# plan_class_spec.xml

GOOD = """<?xml version="1.0"?>
<!-- a project's plan classes -->
<plan_classes>
  <plan_class>
    <name>mt</name>
    <min_ncpus>2</min_ncpus>
    <max_threads>4</max_threads>
    <mem_usage_base_mb>100</mem_usage_base_mb>
    <mem_usage_per_cpu_mb>50</mem_usage_per_cpu_mb>
    <nthreads_cmdline/>
    <cpu_feature>avx</cpu_feature>
    <cpu_feature>sse4_2</cpu_feature>
    <os_regex>Debian|Ubuntu</os_regex>
    <projected_flops_scale>1.1</projected_flops_scale>
  </plan_class>
  <plan_class>
    <name>cuda_new</name>
    <gpu_type>nvidia</gpu_type>
    <cuda>1</cuda>
    <min_nvidia_compcap>300</min_nvidia_compcap>
    <min_cuda_version>8000</min_cuda_version>
    <min_driver_version>40000</min_driver_version>
    <min_gpu_ram_mb>1024</min_gpu_ram_mb>
    <gpu_ram_used_mb>800</gpu_ram_used_mb>
    <ngpus>0.5</ngpus>
    <cpu_frac>0.05</cpu_frac>
  </plan_class>
  <plan_class>
    <name>vbox</name>
    <virtualbox/>
    <is64bit/>
    <exclude_vbox_version>60108</exclude_vbox_version>
    <exclude_vbox_version>60110</exclude_vbox_version>
    <min_wu_id>10</min_wu_id>
  </plan_class>
</plan_classes>
"""


def test_parser_reads_every_kind_of_field():
    specs = pc.parse_specs(GOOD)
    assert list(specs) == ["mt", "cuda_new", "vbox"]
    mt = specs["mt"]
    assert (mt.min_ncpus, mt.max_threads, mt.nthreads_cmdline) == (2.0, 4, True)
    assert (mt.mem_usage_base, mt.mem_usage_per_cpu) == (100 * MB, 50 * MB)
    assert mt.cpu_features == [" avx ", " sse4_2 "]
    # as BOINC: the host's features are lower-cased, the spec's words are not
    upper = pc.parse_specs(GOOD.replace("<cpu_feature>avx<", "<cpu_feature>AVX<"))
    assert pc.app_plan(plan_host(ncpus=8), "mt", upper).reason == \
        "plan class 'mt' needs CPU feature 'AVX'"
    assert mt.os_regex.search("Ubuntu 22.04") and not mt.os_regex.search("Windows")
    assert mt.projected_flops_scale == 1.1 and mt.cpu_frac == 0.1 and mt.line == 4
    cu = specs["cuda_new"]
    assert (cu.gpu_type, cu.cuda, cu.min_nvidia_compcap, cu.ngpus) == ("nvidia", True, 300, 0.5)
    vb = specs["vbox"]
    assert vb.virtualbox and vb.is64bit and vb.exclude_vbox_versions == [60108, 60110]
    assert vb.wu_restricted and not mt.wu_restricted


@pytest.mark.parametrize("body, line, words", [
    ("<plan_class><name>a</name><min_ncpus>two</min_ncpus></plan_class>", 3,
     "<min_ncpus> must be a number, not 'two'"),
    ("<plan_class><name>a</name>\n<max_threads>2.5</max_threads></plan_class>", 4,
     "<max_threads> must be an integer"),
    ("<plan_class><name>a</name><min_ncpu>2</min_ncpu></plan_class>", 3,
     "unknown tag <min_ncpu>"),
    ("<plan_class><name>a</name><gpu_type>nvida</gpu_type></plan_class>", 3,
     "unknown <gpu_type> 'nvida'"),
    ("<plan_class><name>a</name><os_regex>Linux(</os_regex></plan_class>", 3,
     "<os_regex>: bad regular expression"),
    ("<plan_class><name>a</name><cuda>yes</cuda></plan_class>", 3, "<cuda> must be 0 or 1"),
    ("<plan_class><min_ncpus>2</min_ncpus></plan_class>", 3, "has no <name>"),
    ("<plan_class><name>a</name></plan_class>\n<plan_class><name>a</name></plan_class>", 4,
     "'a' is defined twice"),
    ("<plan_class><name>a</name>\n<min_ncpus>2</plan_class>", 4,
     "<min_ncpus> is not closed"),
    ("<plan_class><name>a</name></plan_class>\n<plan_clas></plan_clas>", 4,
     "unexpected <plan_clas>"),
])
def test_parser_errors_name_file_line_and_tag(body, line, words):
    text = "<?xml version='1.0'?>\n<plan_classes>\n%s\n</plan_classes>\n" % body
    with pytest.raises(pc.PlanClassSpecError) as e:
        pc.parse_specs(text, "/p/plan_class_spec.xml")
    assert str(e.value).startswith("/p/plan_class_spec.xml line %d: " % line)
    assert words in str(e.value)


def test_parser_wants_the_root_and_its_end():
    with pytest.raises(pc.PlanClassSpecError, match="line 1: expected <plan_classes>"):
        pc.parse_specs("<plan_class><name>a</name></plan_class>")
    with pytest.raises(pc.PlanClassSpecError, match="missing </plan_classes>"):
        pc.parse_specs("<plan_classes>\n<plan_class><name>a</name></plan_class>\n")


def test_load_specs_absent_bad_and_changed(tmp_path):
    assert pc.load_specs(str(tmp_path)) is None
    f = tmp_path / "plan_class_spec.xml"
    f.write_text("<plan_classes>\n<plan_class><name>x</name><bogus/></plan_class>\n"
                 "</plan_classes>\n")
    bad = pc.load_specs(str(tmp_path))
    assert isinstance(bad, pc.PlanClassSpecError) and "line 2: unknown tag <bogus>" in str(bad)
    assert pc.load_specs(str(tmp_path)) is bad            # cached: parsed once
    r = pc.app_plan(plan_host(), "x", bad)
    assert not r and "plan class 'x' refused: " in r.reason and "<bogus>" in r.reason
    f.write_text(GOOD)
    os.utime(f, (time.time() + 5, time.time() + 5))
    assert list(pc.load_specs(str(tmp_path))) == ["mt", "cuda_new", "vbox"]


def test_spec_cpu_class():
    specs = pc.parse_specs(GOOD)
    hu = pc.app_plan(plan_host(ncpus=8), "mt", specs)
    # 4 threads (max_threads), memory for all four: 100 + 4 * 50 MB
    assert (hu.proc_type, hu.avg_ncpus, hu.mem_usage) == (0, 4.0, 300 * MB)
    assert hu.cmdline == " --memory_size_mb 300 --nthreads 4"
    assert hu.peak_flops == 4e9 and hu.projected_flops == pytest.approx(4.4e9)
    # RAM for only 3 CPUs
    hu = pc.app_plan(plan_host(ncpus=8, usable_ram=260 * MB), "mt", specs)
    assert hu.avg_ncpus == 3.0 and hu.mem_usage == 250 * MB
    r = pc.app_plan(plan_host(ncpus=8, usable_ram=150 * MB), "mt", specs)
    assert r.reason == "plan class 'mt' needs 200 MB of RAM, host has 150 MB usable"
    assert pc.app_plan(plan_host(ncpus=1), "mt", specs).reason == \
        "plan class 'mt' needs 2 CPUs, host has 1"
    r = pc.app_plan(plan_host(features="fpu sse sse2 AVX"), "mt", specs)
    assert r.reason == "plan class 'mt' needs CPU feature 'sse4_2'"
    r = pc.app_plan(plan_host(os_version="Fedora 40 [6.8.0|libc 2.39]"), "mt", specs)
    assert "doesn't accept OS version 'Fedora 40" in r.reason
    assert pc.app_plan(plan_host(), "sse3", specs).reason == \
        "plan class 'sse3' is not in plan_class_spec.xml"


def test_spec_gpu_class():
    specs = pc.parse_specs(GOOD)
    r = pc.app_plan(plan_host(), "cuda_new", specs)
    assert r.reason == "plan class 'cuda_new' needs an NVIDIA GPU"
    hu = pc.app_plan(plan_host(coprocs=[coproc_cuda()]), "cuda_new", specs)
    assert (hu.proc_type, hu.gpu_usage, hu.gpu_ram) == (1, 0.5, 800 * MB)
    speed, cpu = pc.coproc_perf(1e9, 0.5 * 5e12, 0.05)
    assert hu.projected_flops == pytest.approx(speed) and hu.avg_ncpus == pytest.approx(cpu)
    assert hu.peak_flops == pytest.approx(0.5 * 5e12 + cpu * 1e9)
    for cuda, words in ((dict(cc=(2, 1)), "needs compute capability 300, GPU has 201"),
                        (dict(cuda=7050), "needs CUDA version 8000, GPU has 7050"),
                        (dict(drv=39000), "needs driver version 40000, GPU has 39000"),
                        (dict(ram=512 * MB), "needs 1024 MB of GPU RAM, GPU has 512 MB")):
        r = pc.app_plan(plan_host(coprocs=[coproc_cuda(**cuda)]), "cuda_new", specs)
        assert r.reason == "plan class 'cuda_new' " + words


def test_spec_vbox_and_job_ids():
    specs = pc.parse_specs(GOOD)
    ph = plan_host()
    assert pc.app_plan(ph, "vbox", specs).reason == "plan class 'vbox' needs VirtualBox"
    assert ph.messages == ["VirtualBox is not installed"]
    assert pc.app_plan(plan_host(vbox="6.1.10"), "vbox", specs).reason == \
        "plan class 'vbox' excludes VirtualBox 60110"
    assert pc.app_plan(plan_host(vbox="7.0.12"), "vbox", specs).avg_ncpus == 1.0
    r = pc.app_plan(plan_host(vbox="7.0.12"), "vbox", specs, {"id": 5, "batch": 0})
    assert "job #5 is older than plan class 'vbox' allows (min_wu_id 10)" in r.reason


# ---------------------------------------------------------------------------
# BOINC's built-in plan classes

def test_builtin_mt_nci_sse3():
    assert pc.app_plan(plan_host(ncpus=1), "mt").reason == \
        "plan class 'mt' needs 2 CPUs, host has 1"
    hu = pc.app_plan(plan_host(ncpus=8), "mt")
    assert (hu.avg_ncpus, hu.cmdline, hu.peak_flops) == (8.0, "--nthreads 8", 8e9)
    assert hu.projected_flops == pytest.approx(8e9 * .99)
    assert pc.app_plan(plan_host(ncpus=100), "mt").avg_ncpus == 64.0
    hu = pc.app_plan(plan_host(), "nci")
    assert (hu.avg_ncpus, hu.peak_flops) == (.01, 1e9 * .01)
    assert hu.projected_flops == pytest.approx(1.01e9)
    hu = pc.app_plan(plan_host(), "sse3")                 # the fixture's CPU reports pni
    assert hu.projected_flops == pytest.approx(1.1e9) and hu.avg_ncpus == 1
    assert "needs SSE3" in pc.app_plan(plan_host(features="fpu sse sse2"), "sse3").reason
    assert pc.app_plan(plan_host(), "foo").reason.startswith("plan class 'foo' is unknown")


def test_builtin_cuda_classes():
    assert pc.app_plan(plan_host(), "cuda").reason == "plan class 'cuda' needs an NVIDIA GPU"
    # compute capability 1.3, old driver RT: the original "cuda" class
    ph = plan_host(coprocs=[coproc_cuda(cc=(1, 3), cuda=2030, drv=19038, ram=1024 * MB,
                                        peak=1e11)])
    hu = pc.app_plan(ph, "cuda")
    assert (hu.proc_type, hu.gpu_usage, hu.gpu_ram) == (1, 1.0, 256 * MB)
    speed, cpu = pc.coproc_perf(1e9, .20 * 1e11, .01)
    assert hu.projected_flops == pytest.approx(speed) and hu.avg_ncpus == pytest.approx(cpu)
    assert hu.peak_flops == pytest.approx(1e11 + cpu * 1e9)
    assert pc.app_plan(ph, "cuda23").gpu_ram == 384 * MB
    assert pc.app_plan(ph, "cuda_fermi").reason == \
        "plan class 'cuda_fermi' needs compute capability 2.0, GPU has 1.3"
    # a Maxwell card: too new for "cuda"/"cuda23" (max 2.0, exclusive), fine for fermi
    ph = plan_host(coprocs=[coproc_cuda(cc=(5, 2))])
    assert pc.app_plan(ph, "cuda").reason == \
        "plan class 'cuda' needs compute capability below 2.0, GPU has 5.2"
    assert pc.app_plan(ph, "cuda_fermi").proc_type == 1
    ph = plan_host(coprocs=[coproc_cuda(cc=(2, 0), cuda=2030, drv=19500)])
    assert pc.app_plan(ph, "cuda_fermi").reason == \
        "plan class 'cuda_fermi' needs CUDA version 3000, GPU has 2030"
    ph = plan_host(coprocs=[coproc_cuda(cc=(1, 1), cuda=0, drv=17000)])
    assert pc.app_plan(ph, "cuda").reason == \
        "plan class 'cuda' needs NVIDIA driver 177.00, GPU has 170.00"
    ph = plan_host(coprocs=[coproc_cuda(cc=(1, 1), ram=200 * MB)])
    assert pc.app_plan(ph, "cuda").reason == \
        "plan class 'cuda' needs 256 MB of GPU RAM, GPU has 200 MB"
    assert "is not a plan class BOINC knows" in pc.app_plan(ph, "cuda99").reason


def test_builtin_ati_and_opencl_classes():
    assert pc.app_plan(plan_host(), "ati14").reason == "plan class 'ati14' needs an AMD/ATI GPU"
    ph = plan_host(coprocs=[coproc_ati()])
    hu = pc.app_plan(ph, "ati14")
    assert (hu.proc_type, hu.gpu_usage, hu.gpu_ram) == (2, 1.0, 256 * MB)
    assert hu.projected_flops == pytest.approx(pc.coproc_perf(1e9, .23 * 2e12, .01)[0])
    assert pc.app_plan(ph, "ati").reason == "plan class 'ati' needs the AMD runtime libraries"
    ph = plan_host(coprocs=[coproc_ati(cal="1.3.100")])
    assert pc.app_plan(ph, "ati14").reason == \
        "plan class 'ati14' needs CAL version 1.4.0, GPU has 1.3.100"
    # OpenCL: Intel GPU, version from the name's trailing number
    ph = plan_host(coprocs=[coproc_intel()])
    hu = pc.app_plan(ph, "opencl_intel_gpu_102")
    assert (hu.proc_type, hu.gpu_ram) == (3, 256 * MB)
    assert hu.projected_flops == pytest.approx(pc.coproc_perf(1e9, .2 * 4e11, .1)[0])
    assert pc.app_plan(ph, "opencl_intel_gpu_200").reason == \
        "plan class 'opencl_intel_gpu_200' needs OpenCL version 200, GPU has 102"
    ph = plan_host(coprocs=[coproc_cuda(opencl="OpenCL 3.0 CUDA")])
    assert pc.app_plan(ph, "opencl_nvidia_101").proc_type == 1
    assert pc.app_plan(plan_host(coprocs=[coproc_cuda()]), "opencl_nvidia_101").reason == \
        "plan class 'opencl_nvidia_101' needs OpenCL on the GPU"
    # as BOINC: "opencl_ati_N" has no "amd" in it and is refused
    assert not pc.app_plan(plan_host(coprocs=[coproc_ati()]), "opencl_ati_101")


def test_builtin_vbox():
    assert pc.app_plan(plan_host(), "vbox64").reason == "plan class 'vbox64' needs VirtualBox"
    r = pc.app_plan(plan_host(vbox="3.1.0"), "vbox64")
    assert "needs VirtualBox 3.2 or later" in r.reason
    ph = plan_host(ncpus=4, vbox="7.0.12", features="fpu sse svm")
    hu = pc.app_plan(ph, "vbox64_mt")
    assert (hu.avg_ncpus, hu.cmdline) == (4.0, "--nthreads 4.000000")
    assert hu.projected_flops == pytest.approx(.99 * 4e9)
    # no VM extensions: 64-bit VMs are refused
    r = pc.app_plan(plan_host(vbox="7.0.12", features="fpu sse"), "vbox64")
    assert r.reason == "plan class 'vbox64' needs VM acceleration (vmx/svm)"
    assert "primary platform" in pc.app_plan(ph, "vbox32").reason


# ---------------------------------------------------------------------------
# through the request handler

ENV = {"REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": "POST"}


@pytest.fixture
def versions(sched_env):
    """The plain version (id 1) plus an mt and a cuda_fermi version of example_app."""
    env = sched_env
    app, plat = env.app(), env.platform()
    ids = {"": env.app_version()["id"]}
    for plan in ("mt", "cuda_fermi"):
        ids[plan] = env.execute(
            "INSERT INTO app_version (create_time, appid, version_num, platformid, xml_doc, "
            "plan_class) VALUES (%s, %s, 100, %s, %s, %s)",
            (1700000000, app["id"], plat["id"], APP_VERSION_XML, plan))
    # BOINC's default random spread (1.0) would make the choice a coin toss
    env.set_options(report_grace_period=0, version_select_random_factor=0)
    for i in range(4):
        env.add_job("pc%d" % i)
    return ids


def post(env, data):
    feeder = make_feeder(env.cfg)
    feeder.one_pass()
    array = shmem.attach(env.cfg, wait_ready=1)
    try:
        log = SchedLog(io.StringIO(), 3)
        out = handle_request(env.cfg, data, dict(ENV), job_array=array, log=log)
    finally:
        array.close()
        feeder.shutdown()
    text = out.decode()
    return ET.fromstring(text.partition("\n\n")[2]), log.stream.getvalue()


def sent_versions(env, root):
    names = [r.findtext("name") for r in root.findall("result")]
    rows = [env.row("SELECT app_version_id FROM result WHERE name = %s", (n,))
            for n in names]
    return [r["app_version_id"] for r in rows]


def test_nvidia_host_gets_the_cuda_version(sched_env, versions):
    env = sched_env
    data = request_with(ncpus=2, coprocs=[coproc_cuda(cc=(7, 5), cuda=11040)])
    data = data.replace(b"<cpu_req_secs>1.000000</cpu_req_secs>",
                        b"<cpu_req_secs>0.000000</cpu_req_secs>")
    root, log = post(env, data)
    assert sent_versions(env, root)[:1] == [versions["cuda_fermi"]]
    avs = root.findall("app_version")
    assert [a.findtext("plan_class") for a in avs] == ["cuda_fermi"]
    av = avs[0]
    assert av.find("coproc").findtext("type") == "NVIDIA"
    assert float(av.find("coproc").findtext("count")) == 1.0
    assert float(av.findtext("gpu_ram")) == 384 * MB
    assert 0 < float(av.findtext("avg_ncpus")) < 1
    assert root.find("result").findtext("plan_class") == "cuda_fermi"


def test_cpu_hosts_get_mt_or_the_plain_version(sched_env, versions):
    env = sched_env
    root, log = post(env, request_with(ncpus=2))
    assert set(sent_versions(env, root)) == {versions["mt"]}
    av = root.find("app_version")
    assert (av.findtext("plan_class"), av.findtext("cmdline")) == ("mt", "--nthreads 2")
    assert float(av.findtext("avg_ncpus")) == 2.0 and av.find("coproc") is None
    env.execute("UPDATE result SET server_state = 2, hostid = 0 WHERE server_state = 4")
    root, log = post(env, request_with(ncpus=1))
    assert set(sent_versions(env, root)) == {versions[""]}
    av = root.find("app_version")
    assert av.findtext("plan_class") is None and float(av.findtext("avg_ncpus")) == 1.0


def test_nothing_fits_says_which_plan_class_and_why(sched_env, versions):
    env = sched_env
    env.execute("UPDATE app_version SET deprecated = 1 WHERE id IN (%s, %s)",
                (versions[""], versions["cuda_fermi"]))
    root, log = post(env, request_with(ncpus=1))
    assert root.find("result") is None
    msgs = [m.text for m in root.findall("message")]
    assert ("No version of the application suits this computer's hardware: "
            "plan class 'mt' needs 2 CPUs, host has 1") in msgs
    assert "plan_class: plan class 'mt' needs 2 CPUs, host has 1" in log


def test_bad_spec_file_is_logged_and_refuses(sched_env, versions):
    env = sched_env
    env.execute("UPDATE app_version SET deprecated = 1 WHERE id = %s", (versions[""],))
    with open(os.path.join(env.cfg.project_dir, "plan_class_spec.xml"), "w") as f:
        f.write("<plan_classes>\n<plan_class>\n<name>mt</name>\n<min_ncpus>x</min_ncpus>\n"
                "</plan_class>\n</plan_classes>\n")
    root, log = post(env, request_with(ncpus=4))
    assert root.find("result") is None
    assert log.count("Error parsing plan class spec file: ") == 1
    assert "plan_class_spec.xml line 4: <min_ncpus> must be a number, not 'x'" in log
    assert any("plan class 'mt' refused: " in (m.text or "") for m in root.findall("message"))


def test_spec_file_drives_the_reply(sched_env, versions):
    env = sched_env
    with open(os.path.join(env.cfg.project_dir, "plan_class_spec.xml"), "w") as f:
        f.write("<plan_classes>\n<plan_class>\n<name>mt</name>\n<max_threads>8</max_threads>\n"
                "<nthreads_cmdline/>\n<mem_usage_base_mb>100</mem_usage_base_mb>\n"
                "<mem_usage_per_cpu_mb>50</mem_usage_per_cpu_mb>\n</plan_class>\n"
                "</plan_classes>\n")
    data = request_with(ncpus=4, coprocs=[coproc_cuda(cc=(7, 5), req_secs=0.0)])
    root, log = post(env, data)
    assert set(sent_versions(env, root)) == {versions["mt"]}
    av = root.find("app_version")
    assert av.findtext("cmdline") == " --memory_size_mb 300 --nthreads 4"
    assert float(av.findtext("avg_ncpus")) == 4.0
    # the plan class's memory use replaces the job's rsc_memory_bound
    assert float(root.find("workunit").findtext("rsc_memory_bound")) == 300 * MB
    assert "Error parsing" not in log


def test_spec_job_id_range_is_checked_for_every_job(sched_env, versions):
    env = sched_env
    env.execute("UPDATE app_version SET deprecated = 1 WHERE id = %s", (versions[""],))
    with open(os.path.join(env.cfg.project_dir, "plan_class_spec.xml"), "w") as f:
        f.write("<plan_classes>\n<plan_class>\n<name>mt</name>\n<max_threads>2</max_threads>\n"
                "<min_wu_id>2</min_wu_id>\n</plan_class>\n</plan_classes>\n")
    data = request_with(ncpus=2).replace(b"<work_req_seconds>1.000000</work_req_seconds>",
                                         b"<work_req_seconds>864000</work_req_seconds>")
    data = data.replace(b"<cpu_req_secs>1.000000</cpu_req_secs>",
                        b"<cpu_req_secs>864000</cpu_req_secs>")
    root, log = post(env, data)
    # As BOINC, the version is chosen once per request, with the first job
    # looked at (if that's job 1, nothing is sent); job 1 itself never goes.
    names = [r.findtext("wu_name") for r in root.findall("result")]
    assert "pc0" not in names
    assert names or "job #1 is older than plan class 'mt' allows (min_wu_id 2)" in log


def test_infeasible_custom_checks_the_job_range():
    from boincpy.sched import check, choose

    class W:                    # the parts of choose.Work infeasible_custom reads
        pc_specs = pc.parse_specs(GOOD)
        reasons = {}
        reason = choose.Work.reason
    bav = choose.BestVersion(1, {"id": 7, "plan_class": "vbox"}, None, pc.HostUsage(), 7)
    w = W()
    assert check.infeasible_custom(w, {"id": 12, "batch": 0}, {}, bav) is None
    assert check.infeasible_custom(w, {"id": 9, "batch": 0}, {}, bav) == "plan_class"
    assert w.reasons == {"plan_class": "job #9 is older than plan class 'vbox' allows "
                                       "(min_wu_id 10)"}
    bav.av = {"id": 7, "plan_class": "mt"}          # not job-restricted
    assert check.infeasible_custom(w, {"id": 9, "batch": 0}, {}, bav) is None


def opencl_cpu_prop(vendor="Intel(R) Corporation", version="OpenCL 1.2 (Build 37)"):
    return ("    <opencl_cpu_prop>\n   <platform_vendor>%s</platform_vendor>\n"
            "   <opencl_cpu_info>\n      <name>Intel(R) Core(TM) i7</name>\n"
            "      <global_mem_size>8000000000</global_mem_size>\n"
            "      <opencl_device_version>%s</opencl_device_version>\n"
            "   </opencl_cpu_info>\n</opencl_cpu_prop>\n" % (vendor, version))


def test_opencl_cpu_versions():
    specs = pc.parse_specs("<plan_classes>\n<plan_class>\n<name>ocl_cpu</name>\n<opencl/>\n"
                           "<min_opencl_version>102</min_opencl_version>\n</plan_class>\n"
                           "</plan_classes>\n")
    ph = plan_host(extra_host=opencl_cpu_prop())
    assert len(ph.host.opencl_cpu_props) == 1 and ph.host.p_ncpus == 2
    hu = pc.app_plan(ph, "ocl_cpu", specs)
    assert (hu.proc_type, hu.avg_ncpus) == (0, 1.0)
    ph = plan_host(extra_host=opencl_cpu_prop(version="OpenCL 1.1 (Build 1)"))
    assert "no OpenCL CPU platform of the host qualifies" in \
        pc.app_plan(ph, "ocl_cpu", specs).reason
    assert pc.app_plan(plan_host(), "ocl_cpu", specs).reason == \
        "plan class 'ocl_cpu' needs OpenCL for the CPU"
    # built-in: BOINC wants platform_vendor exactly "intel", then it's mt
    hu = pc.app_plan(plan_host(extra_host=opencl_cpu_prop("intel")), "opencl_cpu_intel")
    assert hu.avg_ncpus == 2.0 and hu.cmdline == "--nthreads 2"
    assert "vendor 'intel'" in pc.app_plan(plan_host(extra_host=opencl_cpu_prop()),
                                           "opencl_cpu_intel").reason


def test_gpu_messages():
    specs = pc.parse_specs(GOOD)
    have = [True, True, False, False, False]
    ph = plan_host(coprocs=[coproc_cuda(drv=39000)])
    assert not pc.app_plan(ph, "cuda_new", specs)
    assert pc.gpu_messages(ph, have) == [
        ("notice", "NVIDIA GPU: Upgrade to the latest driver to process tasks using your "
                   "computer's GPU")]
    assert pc.gpu_messages(ph, have, anonymous=True) == []
    ph = plan_host(coprocs=[coproc_cuda(ram=512 * MB)])
    assert not pc.app_plan(ph, "cuda_new", specs)
    # as BOINC's GPU_REQUIREMENTS::update: cuda_new's min_driver_version
    # (recorded with RAM 0) wipes its RAM minimum, so no message
    assert pc.gpu_messages(ph, have) == []
    ram_only = pc.parse_specs(GOOD.replace("<min_driver_version>40000</min_driver_version>", ""))
    assert not pc.app_plan(ph, "cuda_new", ram_only)
    assert pc.gpu_messages(ph, have) == [
        ("low", "A minimum of 1024 MB (preferably 1024 MB) of video RAM is needed to process "
                "tasks using your computer's NVIDIA GPU")]
    # built-in classes record theirs: cuda wants driver 177.00, cuda23 190.38
    ph = plan_host(coprocs=[coproc_cuda(cc=(1, 3), cuda=0, drv=18000)])
    assert pc.app_plan(ph, "cuda") and not pc.app_plan(ph, "cuda23")
    assert pc.gpu_messages(ph, have) == [
        ("low", "NVIDIA GPU: Upgrade to the latest driver to use all of this project's GPU "
                "applications")]
    # a GPU-only project and a host without GPUs (BOINC's wording, "GPU GPU" and all)
    assert pc.gpu_messages(plan_host(), [False, True, True, False, False]) == [
        ("notice", "An NVIDIA GPU or AMD/ATI GPU GPU is required to run tasks for this "
                   "project")]


def test_old_nvidia_driver_gets_the_upgrade_notice(sched_env, versions):
    env = sched_env
    data = request_with(ncpus=1, coprocs=[coproc_cuda(cc=(7, 5), drv=19000)])
    data = data.replace(b"<cpu_req_secs>1.000000</cpu_req_secs>",
                        b"<cpu_req_secs>0.000000</cpu_req_secs>")
    root, log = post(env, data)
    assert root.find("result") is None
    notices = [m.text for m in root.findall("message") if m.get("priority") == "notice"]
    assert "NVIDIA GPU: Upgrade to the latest driver to process tasks using your " \
           "computer's GPU" in notices
    # both versions' reasons, in the log and the message
    reasons = ("plan class 'mt' needs 2 CPUs, host has 1; "
               "plan class 'cuda_fermi' needs NVIDIA driver 195.00, GPU has 190.00")
    assert "No tasks sent: plan_class: " + reasons in log
    assert "No version of the application suits this computer's hardware: " + reasons in \
        [m.text for m in root.findall("message")]
