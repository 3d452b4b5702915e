"""The feeder's job array: a POSIX shared-memory segment shared with the schedulers.

BOINC's feeder keeps a fixed-size cache of sendable (result, workunit) pairs,
plus copies of the small static tables, in a SysV segment keyed by
``<shmem_key>``; every scheduler process maps it, so a request finds work
without scanning the database.  This module is that segment, as a file in
shm_open's namespace (``/dev/shm`` on Linux), opened with ``posix.open`` and
mapped with ``mmap`` (when a slot is read: :class:`JobArray`).
(``multiprocessing.shared_memory`` is not used: its resource tracker unlinks
segments when the creating process exits.)

Name: ``/dev/shm/boincpy.<project dir basename>.<shmem_key as 8 hex digits>.
<first 8 hex digits of the MD5 of the project directory's real path>``, so
two projects on one machine never share a segment even with the same key.

Permissions: the feeder runs as the operator, the scheduler CGI as the web
server's user, and both write (schedulers reserve slots).  The segment gets
the group of the project's log directory (the scheduler already has to write
``scheduler.log`` there, so the web server's user can use that group) and
mode 0660; 0666 only if that log directory is itself world-writable.  If the
operator can't give the file that group, the feeder logs it.

Layout (little-endian, fixed at creation; ``LAYOUT_VERSION`` bumps on change)::

    header   (4096 bytes)  magic, layout version, sizes, capacities, counts,
                           ready flag, feeder pid, fill time, perf_info,
                           backlog (sendable jobs wait outside the array)
    tables   (capacity fixed at creation, >= 1 MiB)  platforms, apps,
                           app_versions (with xml_doc), assignments: one
                           marshal'd dict, rewritten on reread_db
    slots    nslots x SLOT_SIZE: state, result id/priority/server_state/
                           report deadline, the workunit fields job choice
                           needs, name, keywords, and the workunit xml_doc
                           (up to XML_CAPACITY bytes; a bigger doc is not
                           copied: ``xml_len`` is -1 and the scheduler reads
                           it from the database when it sends the job)

Slot ``state``: EMPTY (0), PRESENT (1), or the PID of the scheduler process
that has reserved it.  Every state change happens under an fcntl lock on the
segment file (open-file-description locks where the kernel has them), which
the kernel releases when a process dies, so a crashed scheduler or feeder
never wedges the array; the feeder puts slots reserved by PIDs that no longer
exist back to PRESENT.  Claiming a slot is a compare-and-set under that lock,
so two schedulers never take the same slot; the conditional UPDATE of the
result row (boincpy.sched.choose) remains the real guarantee.

Only the standard library's builtin modules are imported: the scheduler is a
CGI and pays for every import on every request.
"""

import marshal
import posix     # not os, on a classic CGI's path (boincpy.hot_path.join)
import time

# struct.py only re-exports the builtin _struct: taken directly, a CGI
# skips one pass through the import system (0.4 million instructions)
import _struct as struct

from boincpy.errors import ShmemError
from boincpy.files import md5_hex
from boincpy.hot_path import join, real_path

SHM_DIR = "/dev/shm"
MAGIC = b"BPYJOBS\x00"
LAYOUT_VERSION = 2

EMPTY = 0
PRESENT = 1

HEADER_SIZE = 4096
NAME_BYTES = 768          # workunit.name varchar(191), utf8mb4
KEYWORDS_BYTES = 1024     # workunit.keywords varchar(254), utf8mb4
XML_CAPACITY = 16384      # workunit.xml_doc bytes kept in a slot (BOINC's blob: 64 KiB)
MIN_TABLES_CAPACITY = 1 << 20
PAGE = 4096

_HEADER_FIELDS = (
    ("magic", "8s"), ("layout_version", "I"), ("header_size", "I"),
    ("slot_size", "I"), ("nslots", "I"), ("xml_capacity", "I"),
    ("tables_offset", "Q"), ("tables_capacity", "Q"), ("tables_len", "Q"),
    ("slots_offset", "Q"), ("tables_gen", "I"), ("ready", "I"),
    ("n_present", "i"), ("n_high_priority", "i"), ("feeder_pid", "i"),
    ("nplatforms", "I"), ("napps", "I"), ("napp_versions", "I"),
    ("nassignments", "I"), ("have_apps", "5s"), ("have_nci_app", "B"),
    ("create_time", "d"), ("fill_time", "d"), ("tables_time", "d"),
    ("host_fpops_mean", "d"), ("host_fpops_stddev", "d"),
    ("host_fpops_50_percentile", "d"), ("host_fpops_95_percentile", "d"),
    ("app_weight_sum", "d"), ("backlog", "i"),
)

# The first six slot fields are the "head" a scan reads for every slot.
_SLOT_FIELDS = (
    ("state", "i"), ("res_priority", "i"), ("infeasible_count", "i"),
    ("need_reliable", "i"), ("resultid", "q"), ("appid", "q"),
    ("res_server_state", "i"), ("res_report_deadline", "d"),
    ("time_added", "d"), ("fpops_size", "d"),
    ("id", "q"), ("create_time", "i"),
    ("rsc_fpops_est", "d"), ("rsc_fpops_bound", "d"), ("rsc_memory_bound", "d"),
    ("rsc_disk_bound", "d"), ("rsc_bandwidth_bound", "d"),
    ("delay_bound", "i"), ("priority", "i"), ("batch", "i"), ("hr_class", "i"),
    ("app_version_id", "q"), ("app_version_num", "i"), ("size_class", "i"),
    ("target_nresults", "i"), ("min_quorum", "i"), ("fileset_id", "q"),
    ("transitioner_flags", "i"), ("error_mask", "i"), ("opaque", "d"),
    ("canonical_resultid", "q"), ("transition_time", "i"),
    ("name_len", "H"), ("keywords_len", "H"), ("xml_len", "i"),
)


def _offsets(fields):
    out, off = {}, 0
    for name, fmt in fields:
        st = struct.Struct("<" + fmt)
        out[name] = (off, st)
        off += st.size
    return out, off


HEADER = struct.Struct("<" + "".join(f for _, f in _HEADER_FIELDS))
HEADER_NAMES = tuple(n for n, _ in _HEADER_FIELDS)
_H, _ = _offsets(_HEADER_FIELDS)

SLOT_FIXED = struct.Struct("<" + "".join(f for _, f in _SLOT_FIELDS))
SLOT_NAMES = tuple(n for n, _ in _SLOT_FIELDS)
SLOT_HEAD = struct.Struct("<iiiiqq")       # state, priority, infeasible, reliable, resultid, appid
_S, _ = _offsets(_SLOT_FIELDS)
_STATE = struct.Struct("<i")
_NAME_OFF = SLOT_FIXED.size
_KW_OFF = _NAME_OFF + NAME_BYTES
_XML_OFF = _KW_OFF + KEYWORDS_BYTES
# workunit fields a slot holds (everything from "id" on, minus the lengths)
WU_FIELDS = SLOT_NAMES[SLOT_NAMES.index("id"):SLOT_NAMES.index("name_len")]
_WU_START = SLOT_NAMES.index("id")
_WU_END = SLOT_NAMES.index("name_len")


def slot_size(xml_capacity=XML_CAPACITY):
    """Bytes per slot (rounded up to 64)."""
    return (_XML_OFF + xml_capacity + 63) // 64 * 64


_SEGMENT_PATHS = {}


def segment_path(cfg):
    """The segment's file for this project (see the module docstring)."""
    # asked on every request of a persistent process, and for each doorbell
    # rung: realpath's lstat of every component is most of the cost
    key = (cfg.project_dir, cfg.shmem_key)
    path = _SEGMENT_PATHS.get(key)
    if path is None:
        path = _SEGMENT_PATHS[key] = _segment_path(cfg)
    return path


def _segment_path(cfg):
    try:
        project = real_path(cfg.project_dir)
    except OSError:             # no such directory: its name as realpath gives it
        import os
        project = os.path.realpath(cfg.project_dir)
    short = "".join(c if (c.isalnum() or c in "-_") else "_"
                    for c in project.rpartition("/")[2])[:40] or "project"
    key = (cfg.shmem_key or 0) & 0xFFFFFFFF
    # (md5, which the request path has loaded already: zlib's crc32, here
    # before, cost every scheduler request 200,000 instructions to import)
    return join(SHM_DIR, "boincpy.%s.%08x.%s" % (
        short, key, md5_hex(project.encode("utf-8", "surrogateescape"))[:8]))


def segment_mode_and_group(cfg):
    """(mode, gid or None) a new segment gets: this host's log directory's
    group, 0660 (0666 if that directory is world-writable)."""
    try:
        st = posix.stat(cfg.host_log_dir)
    except (OSError, TypeError):
        return 0o660, None
    return (0o666 if st.st_mode & 0o002 else 0o660), st.st_gid


# --------------------------------------------------------------------------
# locking

# fcntl is imported by the first lock a process takes: a scheduler request
# that takes no job never locks the array, and importing fcntl cost each one
# 140,000 instructions
_FLOCK = struct.Struct("hhqqi4x")
_SEEK_SET = 0                       # os.SEEK_SET (posix has no name for it)


def _lock_fd(fd, exclusive=True):
    import fcntl
    if hasattr(fcntl, "F_OFD_SETLKW"):
        fcntl.fcntl(fd, fcntl.F_OFD_SETLKW,
                    _FLOCK.pack(fcntl.F_WRLCK if exclusive else fcntl.F_RDLCK,
                                _SEEK_SET, 0, 1, 0))
    else:                           # pragma: no cover (not Linux)
        fcntl.lockf(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, 1, 0)


def _unlock_fd(fd):
    import fcntl
    if hasattr(fcntl, "F_OFD_SETLKW"):     # _lock_fd's test: undo the lock it took
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(fcntl.F_UNLCK, _SEEK_SET, 0, 1, 0))
    else:                           # pragma: no cover (not Linux)
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0)


class _Lock:
    """``with array.lock():`` -- the array's one mutex (re-entrant per object)."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __enter__(self):
        a = self.array
        if a._lock_depth == 0:
            _lock_fd(a.fd)
        a._lock_depth += 1
        return a

    def __exit__(self, *exc):
        a = self.array
        a._lock_depth -= 1
        if a._lock_depth == 0:
            _unlock_fd(a.fd)
        return False


def pid_alive(pid):
    """True if a process with this PID exists (another user's process counts)."""
    if pid <= 0:
        return False
    try:
        posix.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def plan_class_to_proc_type(plan_class):
    """BOINC's guess of a plan class's processor type (sched_util_basic.cpp)."""
    for word, pt in (("cuda", 1), ("nvidia", 1), ("ati", 2), ("amd", 2),
                     ("intel_gpu", 3), ("apple_gpu", 4)):
        if word in plan_class:
            return pt
    return 0


class Slot:
    """One slot as read: state and result fields, and the workunit as a dict."""

    __slots__ = ("index", "state", "res_priority", "infeasible_count", "need_reliable",
                 "resultid", "appid", "res_server_state", "res_report_deadline",
                 "time_added", "fpops_size", "xml_len", "wu")

    def __repr__(self):
        return "<Slot %d state=%d result=%d wu=%s>" % (
            self.index, self.state, self.resultid, self.wu.get("name"))


class JobArray:
    """A job array.  Schedulers get one from :func:`attach`; the feeder
    from :meth:`create`.

    The segment is mapped (:attr:`mm`) when a slot is first read or anything
    written: until then the header and tables are read with ``pread``.  A
    classic CGI's request that asks for no work never maps it, and never
    loads the mmap module (0.4 ms of its CPU, with the mapping's faults)."""

    def __init__(self, path, fd, mm=None, size=None):
        self.path = path
        self.fd = fd
        self._mm = mm
        self.size = size if mm is None else len(mm)
        self._lock_depth = 0
        self._tables = None
        self._tables_gen = -1
        self._apps_by_id = {}
        self._mine = set()          # slots this object has reserved and not released
        self._heads_struct = None   # slot_heads(), built on first use
        self.n_emptied = 0          # slots emptied since the feeder was last rung
        h = self.header()
        self.nslots = h["nslots"]
        self.slot_size = h["slot_size"]
        self.slots_offset = h["slots_offset"]
        self.xml_capacity = h["xml_capacity"]
        self.tables_offset = h["tables_offset"]
        self.tables_capacity = h["tables_capacity"]
        self._lock = _Lock(self)

    @property
    def mm(self):
        """The segment, mapped read-write (on first use)."""
        mm = self._mm
        if mm is None:
            if self.fd is None:
                raise ShmemError("the job array %s is closed" % self.path)
            import mmap
            mm = self._mm = mmap.mmap(self.fd, self.size, mmap.MAP_SHARED,
                                      mmap.PROT_READ | mmap.PROT_WRITE)
        return mm

    def _read(self, off, n):
        """N bytes at OFF: from the mapping if there is one, else read."""
        mm = self._mm
        if mm is not None:
            return mm[off:off + n]
        return posix.pread(self.fd, n, off)

    # -- header -----------------------------------------------------------

    def header(self):
        """The header as a dict (``have_apps`` as a list of 5 booleans)."""
        h = dict(zip(HEADER_NAMES, HEADER.unpack(self._read(0, HEADER.size))))
        h["have_apps"] = [bool(b) for b in h["have_apps"]]
        return h

    def _get(self, name):
        off, st = _H[name]
        mm = self._mm
        if mm is not None:
            return st.unpack_from(mm, off)[0]
        return st.unpack(posix.pread(self.fd, st.size, off))[0]

    def _set(self, name, value):
        off, st = _H[name]
        st.pack_into(self.mm, off, value)

    @property
    def ready(self):
        return bool(self._get("ready"))

    @property
    def n_present(self):
        """Slots holding a job nobody has reserved."""
        return self._get("n_present")

    @property
    def n_high_priority(self):
        """Non-empty slots whose result priority is > 0."""
        return self._get("n_high_priority")

    @property
    def backlog(self):
        """True when the feeder's last pass left sendable jobs outside the
        array (it refills as soon as a scheduler empties slots)."""
        return bool(self._get("backlog"))

    def wait_for_work(self, seconds):
        """With no unreserved job in the array but a backlog, wait up to
        ``seconds`` for the feeder's refill (the request that emptied the
        array rang it); True once a job is there.  Polls the header only."""
        if not self._get("ready") or not self._get("backlog"):
            return self._get("n_present") > 0
        deadline = time.monotonic() + seconds
        while self._get("n_present") <= 0:
            if time.monotonic() >= deadline or not self._get("backlog"):
                return False
            time.sleep(0.01)
        return True

    @property
    def feeder_pid(self):
        return self._get("feeder_pid")

    @property
    def have_apps_for_proc_type(self):
        return [bool(b) for b in self._get("have_apps")]

    @property
    def have_nci_app(self):
        return bool(self._get("have_nci_app"))

    def perf_info(self):
        """Host FLOPS statistics (mean, stddev, 50th and 95th percentile)."""
        return {k: self._get(k) for k in ("host_fpops_mean", "host_fpops_stddev",
                                          "host_fpops_50_percentile",
                                          "host_fpops_95_percentile")}

    # -- tables -----------------------------------------------------------

    def tables(self):
        """{"platforms", "apps", "app_versions", "assignments"}: lists of row
        dicts as the feeder read them (re-read after a reread_db)."""
        gen = self._get("tables_gen")
        if gen != self._tables_gen or self._tables is None:
            n = self._get("tables_len")
            off = self.tables_offset
            self._tables = marshal.loads(self._read(off, n)) if n else {
                "platforms": [], "apps": [], "app_versions": [], "assignments": []}
            self._apps_by_id = {a["id"]: a for a in self._tables["apps"]}
            self._tables_gen = gen
        return self._tables

    @property
    def platforms(self):
        return self.tables()["platforms"]

    @property
    def apps(self):
        return self.tables()["apps"]

    @property
    def app_versions(self):
        return self.tables()["app_versions"]

    def lookup_app(self, appid):
        """The app row (dict) with this id, or None (deprecated or unknown)."""
        self.tables()
        return self._apps_by_id.get(appid)

    def lookup_platform(self, name):
        """The non-deprecated platform row called ``name``, or None."""
        for p in self.platforms:
            if p["name"] == name:
                return p
        return None

    # -- slots ------------------------------------------------------------

    def lock(self):
        """Context manager holding the array's lock."""
        return self._lock

    def _slot_off(self, i):
        if not 0 <= i < self.nslots:
            raise IndexError("slot %d out of range (0..%d)" % (i, self.nslots - 1))
        return self.slots_offset + i * self.slot_size

    def slot_state(self, i):
        return _STATE.unpack_from(self.mm, self._slot_off(i))[0]

    def slot_head(self, i):
        """(state, res_priority, infeasible_count, need_reliable, resultid, appid)."""
        return SLOT_HEAD.unpack_from(self.mm, self.slots_offset + i * self.slot_size)

    def slot_heads(self):
        """:meth:`slot_head` of every slot, read in one C loop (the feeder's
        pass reads them all: 2,000 method calls cost more than the pass)."""
        st = self._heads_struct
        if st is None:
            st = self._heads_struct = struct.Struct(
                "<iiiiqq%dx" % (self.slot_size - SLOT_HEAD.size))
        start = self.slots_offset
        view = memoryview(self.mm)[start:start + self.nslots * self.slot_size]
        try:
            return list(st.iter_unpack(view))
        finally:
            view.release()          # the map can be closed again

    def slot_hr_class(self, i):
        """The hr_class of the slot's workunit, as the feeder copied it."""
        off, st = _S["hr_class"]
        return st.unpack_from(self.mm, self._slot_off(i) + off)[0]

    def read_slot(self, i):
        """The whole slot (without the xml_doc: see :meth:`read_xml_doc`)."""
        off = self._slot_off(i)
        mm = self.mm
        vals = SLOT_FIXED.unpack_from(mm, off)
        s = Slot()
        s.index = i
        (s.state, s.res_priority, s.infeasible_count, s.need_reliable, s.resultid,
         s.appid, s.res_server_state, s.res_report_deadline, s.time_added,
         s.fpops_size) = vals[:10]
        wu = dict(zip(WU_FIELDS, vals[_WU_START:_WU_END]))
        name_len, kw_len, s.xml_len = vals[_WU_END:]
        wu["appid"] = s.appid
        wu["name"] = mm[off + _NAME_OFF:off + _NAME_OFF + name_len].decode("utf-8", "replace")
        wu["keywords"] = mm[off + _KW_OFF:off + _KW_OFF + kw_len].decode("utf-8", "replace")
        s.wu = wu
        return s

    def read_xml_doc(self, i):
        """The slot's workunit xml_doc (str), or None if it was too big to cache."""
        off = self._slot_off(i)
        n = SLOT_FIXED.unpack_from(self.mm, off)[-1]
        if n < 0:
            return None
        return self.mm[off + _XML_OFF:off + _XML_OFF + n].decode("utf-8", "replace")

    def _change_state(self, i, old, new, priority):
        """Write a slot's state and keep the header counters right (lock held)."""
        off = self.slots_offset + i * self.slot_size
        _STATE.pack_into(self.mm, off, new)
        delta = (new == PRESENT) - (old == PRESENT)
        if delta:
            self._set("n_present", self._get("n_present") + delta)
        if priority > 0 and new == EMPTY and old != EMPTY:
            self._set("n_high_priority", self._get("n_high_priority") - 1)

    # -- scheduler side -----------------------------------------------------

    def reserve_any(self, pid):
        """BOINC's ``no_work()``: reserve one PRESENT slot for this request.

        Returns False when the array is not ready or holds no unreserved job
        (the request gets "Project has no tasks available").  Reserving one
        slot up front keeps several requests from all counting on the last
        job; the slot is a candidate for this request only, and
        :meth:`restore` gives it back.
        """
        with self._lock:
            if not self._get("ready") or self._get("n_present") <= 0:
                return False
            n = self.nslots
            start = (pid * 7919 + int(time.time() * 1000)) % n
            for k in range(n):
                i = (start + k) % n
                st = self.slot_state(i)
                if st == PRESENT:
                    self._change_state(i, PRESENT, pid, 0)
                    self._mine.add(i)
                    return True
                if st == pid:
                    return True
            return False

    def restore(self, pid, everywhere=False, keep=()):
        """BOINC's ``restore_work()``: slots still reserved by ``pid`` go back to
        PRESENT; returns how many.  Looks at the slots this object reserved
        (cheap), or at every slot with ``everywhere``.  Slots in ``keep``
        (jobs claimed, waiting for the claim's commit) stay reserved, and
        are still this object's to restore should the claim be undone."""
        if not everywhere and not self._mine:
            # nothing reserved, nothing to look at: no lock taken (a persistent
            # worker asks after every request, most of which reserve nothing)
            return 0
        n = 0
        with self._lock:
            slots = range(self.nslots) if everywhere else sorted(self._mine)
            for i in slots:
                if i in keep:
                    continue
                if self.slot_state(i) == pid:
                    self._change_state(i, pid, PRESENT, 0)
                    n += 1
            self._mine.intersection_update(keep)
        return n

    def claim(self, i, resultid, pid, check=None):
        """Reserve slot ``i`` for ``pid`` if it still holds ``resultid`` and is
        PRESENT (or already ours), and ``check(slot)`` (run under the lock,
        e.g. the fast feasibility checks) returns a false value.

        Returns ``(slot, None)`` when reserved, ``(None, reason)`` otherwise
        (reason "taken" when another process has the slot or it changed).
        """
        with self._lock:
            off = self._slot_off(i)
            state, _, _, _, rid, _ = SLOT_HEAD.unpack_from(self.mm, off)
            if (state != PRESENT and state != pid) or rid != resultid:
                return None, "taken"
            slot = self.read_slot(i)
            if check is not None:
                why = check(slot)
                if why:
                    return None, why
            if state == PRESENT:
                self._change_state(i, PRESENT, pid, slot.res_priority)
            self._mine.add(i)
            slot.state = pid
            return slot, None

    def release(self, i, pid, empty=False):
        """Give back a slot reserved by ``pid``: PRESENT again (job not for this
        host), or EMPTY (job sent, or sendable to nobody) for the feeder to
        refill.  Returns False if the slot was no longer ours."""
        with self._lock:
            off = self._slot_off(i)
            state, prio = struct.unpack_from("<ii", self.mm, off)
            self._mine.discard(i)
            if state != pid:
                return False
            self._change_state(i, pid, EMPTY if empty else PRESENT, prio)
        if empty:
            self.n_emptied += 1
        return True

    def take_emptied(self):
        """How many slots this object emptied since the last call (the
        scheduler then rings the feeder's doorbell: boincpy.doorbell)."""
        n, self.n_emptied = self.n_emptied, 0
        return n

    def bump_infeasible_count(self, i, pid):
        """One more ``infeasible_count`` for slot ``i`` while ``pid`` holds it
        (a job committed to another HR class or app version: jobs with a
        count score higher, so committed jobs go out first)."""
        with self._lock:
            off = self._slot_off(i)
            state, _, count = struct.unpack_from("<iii", self.mm, off)
            if state != pid:
                return False
            struct.pack_into("<i", self.mm, off + 8, count + 1)
            return True

    # -- feeder side --------------------------------------------------------

    @classmethod
    def create(cls, path, nslots, tables, xml_capacity=XML_CAPACITY, mode=0o660,
               gid=None, feeder_pid=None):
        """Create a new segment at ``path`` (replacing any old one), not ready.

        Built under a temporary name and renamed into place, so a scheduler
        never maps a half-initialised header.  Returns ``(array, warning)``;
        warning is a sentence when the group could not be set.
        """
        if nslots < 1:
            raise ShmemError("shmem_work_items must be at least 1 (got %d)" % nslots)
        blob = marshal.dumps(tables)
        tables_capacity = max(MIN_TABLES_CAPACITY, 4 * len(blob))
        tables_capacity = (tables_capacity + PAGE - 1) // PAGE * PAGE
        ssize = slot_size(xml_capacity)
        slots_offset = HEADER_SIZE + tables_capacity
        total = slots_offset + nslots * ssize
        tmp = "%s.new.%d" % (path, posix.getpid())
        try:
            posix.unlink(tmp)
        except FileNotFoundError:
            pass
        try:
            fd = posix.open(tmp, posix.O_RDWR | posix.O_CREAT | posix.O_EXCL, 0o600)
        except OSError as exc:
            raise ShmemError("can't create the job array %s: %s" % (tmp, exc.strerror)) from None
        warning = None
        try:
            if gid is not None and gid != posix.getegid():
                try:
                    posix.fchown(fd, -1, gid)
                except PermissionError:
                    warning = ("can't give %s to group %d (the log directory's group): "
                               "schedulers running as another user may not be able to "
                               "attach it" % (path, gid))
            posix.fchmod(fd, mode)
            posix.ftruncate(fd, total)
            import mmap
            mm = mmap.mmap(fd, total, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            posix.close(fd)
            posix.unlink(tmp)
            raise
        now = time.time()
        values = {
            "magic": MAGIC, "layout_version": LAYOUT_VERSION, "header_size": HEADER_SIZE,
            "slot_size": ssize, "nslots": nslots, "xml_capacity": xml_capacity,
            "tables_offset": HEADER_SIZE, "tables_capacity": tables_capacity,
            "tables_len": 0, "slots_offset": slots_offset, "tables_gen": 0, "ready": 0,
            "n_present": 0, "n_high_priority": 0,
            "feeder_pid": posix.getpid() if feeder_pid is None else feeder_pid,
            "nplatforms": 0, "napps": 0, "napp_versions": 0, "nassignments": 0,
            "have_apps": b"\0" * 5, "have_nci_app": 0, "create_time": now,
            "fill_time": 0.0, "tables_time": 0.0, "host_fpops_mean": 2.2e9,
            "host_fpops_stddev": 0.7e9, "host_fpops_50_percentile": 3.3e9,
            "host_fpops_95_percentile": 3.3e9, "app_weight_sum": 0.0, "backlog": 0,
        }
        HEADER.pack_into(mm, 0, *[values[n] for n in HEADER_NAMES])
        array = cls(path, fd, mm)
        array.write_tables(tables)
        try:
            posix.rename(tmp, path)
        except OSError as exc:
            array.close()
            posix.unlink(tmp)
            raise ShmemError("can't replace the job array %s: %s (is it another user's? "
                             "remove it as that user or root)" % (path, exc.strerror)) from None
        return array, warning

    def write_tables(self, tables):
        """Store the static tables; False if they don't fit the tables region
        (then the feeder recreates the segment)."""
        blob = marshal.dumps(tables)
        if len(blob) > self.tables_capacity:
            return False
        have = [0] * 5
        for av in tables.get("app_versions", ()):
            have[plan_class_to_proc_type(av.get("plan_class", ""))] = 1
        apps = tables.get("apps", ())
        with self._lock:
            off = self.tables_offset
            self.mm[off:off + len(blob)] = blob
            self._set("tables_len", len(blob))
            self._set("nplatforms", len(tables.get("platforms", ())))
            self._set("napps", len(apps))
            self._set("napp_versions", len(tables.get("app_versions", ())))
            self._set("nassignments", len(tables.get("assignments", ())))
            self._set("have_apps", bytes(have))
            self._set("have_nci_app", int(any(a.get("non_cpu_intensive") for a in apps)))
            self._set("app_weight_sum", float(sum(a.get("weight", 0) or 0 for a in apps)))
            self._set("tables_time", time.time())
            self._set("tables_gen", self._get("tables_gen") + 1)
        return True

    def set_perf_info(self, mean, stddev, p50, p95):
        self._set("host_fpops_mean", mean)
        self._set("host_fpops_stddev", stddev)
        self._set("host_fpops_50_percentile", p50)
        self._set("host_fpops_95_percentile", p95)

    def set_backlog(self, backlog):
        self._set("backlog", 1 if backlog else 0)

    def set_ready(self, ready=True):
        self._set("ready", 1 if ready else 0)

    def set_fill_time(self, t):
        self._set("fill_time", t)

    def fill_slot(self, i, resultid, res_priority, res_server_state, res_report_deadline,
                  wu, xml_doc, infeasible_count=0, need_reliable=False, now=None):
        """Put a job into EMPTY slot ``i`` and make it PRESENT (lock held).

        ``wu`` is a workunit row (dict); ``xml_doc`` bytes or str.  A doc over
        the slot's xml capacity is not copied (``xml_len`` -1).
        """
        off = self._slot_off(i)
        mm = self.mm
        name = (wu.get("name") or "").encode("utf-8")[:NAME_BYTES]
        kw = (wu.get("keywords") or "").encode("utf-8")[:KEYWORDS_BYTES]
        if xml_doc is None:
            xml_doc = b""
        elif isinstance(xml_doc, str):
            xml_doc = xml_doc.encode("utf-8")
        if len(xml_doc) <= self.xml_capacity:
            xml_len = len(xml_doc)
            mm[off + _XML_OFF:off + _XML_OFF + xml_len] = xml_doc
        else:
            xml_len = -1
        mm[off + _NAME_OFF:off + _NAME_OFF + len(name)] = name
        mm[off + _KW_OFF:off + _KW_OFF + len(kw)] = kw
        g = wu.get
        SLOT_FIXED.pack_into(
            mm, off, EMPTY, int(res_priority), int(infeasible_count), int(bool(need_reliable)),
            int(resultid), int(g("appid") or 0), int(res_server_state),
            float(res_report_deadline or 0), float(now if now is not None else time.time()),
            0.0, int(g("id") or 0), int(g("create_time") or 0),
            float(g("rsc_fpops_est") or 0), float(g("rsc_fpops_bound") or 0),
            float(g("rsc_memory_bound") or 0), float(g("rsc_disk_bound") or 0),
            float(g("rsc_bandwidth_bound") or 0), int(g("delay_bound") or 0),
            int(g("priority") or 0), int(g("batch") or 0), int(g("hr_class") or 0),
            int(g("app_version_id") or 0), int(g("app_version_num") or 0),
            int(g("size_class") if g("size_class") is not None else -1),
            int(g("target_nresults") or 0), int(g("min_quorum") or 0),
            int(g("fileset_id") or 0), int(g("transitioner_flags") or 0),
            int(g("error_mask") or 0), float(g("opaque") or 0),
            int(g("canonical_resultid") or 0), int(g("transition_time") or 0),
            len(name), len(kw), xml_len)
        if res_priority > 0:
            self._set("n_high_priority", self._get("n_high_priority") + 1)
        self._change_state(i, EMPTY, PRESENT, res_priority)

    def note_committed(self, i, resultid):
        """Feeder (lock held): slot ``i`` still holds ``resultid``, whose
        workunit is now committed to an HR class: an infeasible_count of 0
        becomes 1, so the job goes out sooner.  Returns True if changed."""
        off = self._slot_off(i)
        state, _, count, _, rid, _ = SLOT_HEAD.unpack_from(self.mm, off)
        if state == EMPTY or rid != resultid or count != 0:
            return False
        struct.pack_into("<i", self.mm, off + 8, 1)
        return True

    def empty_slot(self, i):
        """Make a slot EMPTY whatever it holds (lock held): purge_stale, reread_db."""
        state, prio = struct.unpack_from("<ii", self.mm, self._slot_off(i))
        if state != EMPTY:
            self._change_state(i, state, EMPTY, prio)

    def reset_slot(self, i, pid):
        """A slot reserved by a dead ``pid`` back to PRESENT (lock held)."""
        if self.slot_state(i) == pid:
            self._change_state(i, pid, PRESENT, 0)

    def destroy(self):
        """Mark not ready and remove the segment's name (if it is still ours)."""
        try:
            self.set_ready(False)
        except ValueError:
            pass
        try:
            st = posix.stat(self.path)
            if st.st_ino == posix.fstat(self.fd).st_ino:
                posix.unlink(self.path)
        except OSError:
            pass

    def close(self):
        """Unmap and close (safe to call twice)."""
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass
            self._mm = None
        if self.fd is not None:
            posix.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_segment(path, mapped=True):
    """Open an existing segment (any state), mapped now unless ``mapped`` is
    false (then on first use: :class:`JobArray`); ShmemError if missing or
    not ours."""
    try:
        fd = posix.open(path, posix.O_RDWR)
    except FileNotFoundError:
        raise ShmemError("no job array at %s" % path,
                         log_text="Can't attach shmem: %s doesn't exist (feeder not running?)"
                         % path) from None
    except PermissionError:
        raise ShmemError(
            "permission denied on %s" % path,
            log_text="Can't attach shmem: permission denied on %s (feeder not running?) "
                     "uid %d euid %d gid %d egid %d" % (path, posix.getuid(), posix.geteuid(),
                                                         posix.getgid(), posix.getegid())) from None
    try:
        size = posix.fstat(fd).st_size
        if size < HEADER_SIZE:
            raise ShmemError("%s is too small to be a job array" % path,
                             log_text="Can't attach shmem: %s is truncated "
                                      "(feeder not running?)" % path)
        magic, version = struct.unpack("<8sI", posix.pread(fd, 12, 0))
    except BaseException:
        posix.close(fd)
        raise
    if magic != MAGIC or version != LAYOUT_VERSION:
        posix.close(fd)
        raise ShmemError("%s has layout %r/%d, expected %r/%d" % (path, magic, version, MAGIC,
                                                                  LAYOUT_VERSION),
                         log_text="shmem has wrong struct sizes - recompile",
                         user_message="Server error: recompile needed")
    array = JobArray(path, fd, size=size)
    expected = array.slots_offset + array.nslots * array.slot_size
    if expected > size:
        array.close()
        raise ShmemError("%s is %d bytes, its header says %d" % (path, size, expected),
                         log_text="shmem has wrong struct sizes - recompile",
                         user_message="Server error: recompile needed")
    if mapped:
        try:
            array.mm
        except BaseException:
            array.close()
            raise
    return array


def attach(cfg, wait_ready=10.0, mapped=True):
    """The scheduler's attach: open this project's array (mapped now unless
    ``mapped`` is false: :func:`open_segment`) and wait for it to be ready.

    Waits up to ``wait_ready`` seconds (BOINC waits 10) for the feeder's ready
    flag.  Raises :class:`boincpy.errors.ShmemError` when the segment is
    missing, unreadable, of another layout, or not ready; the handler logs
    ``exc.log_text`` as CRITICAL and replies ``exc.user_message`` with
    ``<project_is_down/>`` and ``maintenance_delay``.
    """
    array = open_segment(segment_path(cfg), mapped)
    deadline = time.monotonic() + wait_ready
    while not array.ready:
        if time.monotonic() >= deadline:
            array.close()
            raise ShmemError("the job array is not ready",
                             log_text="feeder doesn't seem to be running")
        time.sleep(min(1.0, max(0.05, deadline - time.monotonic())))
    return array
