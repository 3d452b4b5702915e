"""Credit: BOINC's formulas for claimed, granted and recent-average credit.

Everything here is arithmetic on rows already in memory (no database): the
validator loads the rows, calls these functions in the order BOINC does, and
writes the rows back in one transaction.  The constants and formulas are
those of BOINC's ``sched/credit.cpp``, ``lib/util.cpp`` (update_average) and
``sched/sched_util_basic.h`` (AVERAGE, AVERAGE_VAR):

* 1 credit = 1/200 of a day at 1 GFLOPS: ``credit = fpops * 200 / 86400e9``;
* "CreditNew": each valid result's peak FLOP count (PFC) is
  ``elapsed_time * flops_estimate``, scaled by the app version's
  ``pfc_scale`` and the host's scale when enough samples exist; the
  workunit's credit is the "pegged average" of the PFCs around the
  workunit's estimate ``rsc_fpops_est * app.min_avg_pfc``;
* recent average credit (RAC) decays with a 7-day half-life.
"""

import math

from boincpy.record import Record

COBBLESTONE_SCALE = 200 / 86400e9
SECONDS_PER_DAY = 86400.0
CREDIT_HALF_LIFE = SECONDS_PER_DAY * 7
AVG_CPU_FPOPS = 4.3e9          # used when a host reported no usable FLOPS
MIN_HOST_SAMPLES = 10          # host scaling needs this many host samples
MIN_VERSION_SAMPLES = 100      # ... and this many app version samples
CONS_VALID_HOST_SCALE = 10     # app.host_scale_check: consecutive valid needed
HAV_AVG_THRESH, HAV_AVG_WEIGHT, HAV_AVG_LIMIT = 20, 0.01, 10
AV_AVG_THRESH, AV_AVG_WEIGHT, AV_AVG_LIMIT = 100, 0.001, 10
DEFAULT_MAX_GRANTED_CREDIT = 200 * 1000 * 365   # one TeraFLOP-year

# How far a PFC can be trusted (credit.cpp's PFC_MODE_*).
PFC_MODE_NORMAL = 0
PFC_MODE_APPROX = 1
PFC_MODE_WU_EST = 2
PFC_MODE_INVALID = 3


def fpops_to_credit(fpops):
    """Credit for a number of floating-point operations."""
    return fpops * COBBLESTONE_SCALE


def update_average(now, work_start_time, work, half_life, avg, avg_time):
    """BOINC's update_average: return the new (avg, avg_time).

    ``avg`` is work per day.  With an existing average the new work is taken
    as done between ``avg_time`` and ``now`` and blended with weight
    ``exp(-dt ln2 / half_life)``; the first sample is ``work`` over the days
    since ``work_start_time``.
    """
    if avg_time:
        diff = max(now - avg_time, 0.0)
        diff_days = diff / SECONDS_PER_DAY
        weight = math.exp(-diff * math.log(2) / half_life)
        avg *= weight
        if 1.0 - weight > 1e-6:
            avg += (1 - weight) * (work / diff_days)
        else:
            # limit of the above as diff -> 0
            avg += math.log(2) * work * SECONDS_PER_DAY / half_life
    elif work:
        avg = work / ((now - work_start_time) / SECONDS_PER_DAY)
    return avg, now


def average_update(n, avg, sample, thresh, weight, limit):
    """BOINC's AVERAGE::update; return the new (n, avg).

    Negative samples are ignored; a sample above ``avg * limit`` is clamped;
    below ``thresh`` samples the mean is arithmetic, then exponential.
    """
    if sample < 0:
        return n, avg
    if n and avg and sample > avg * limit:
        sample = avg * limit
    n += 1
    delta = sample - avg
    if n < thresh:
        avg += delta / n
    else:
        avg += weight * delta
    return n, avg


def average_var_update(n, avg, var, q, sample, thresh, weight, limit):
    """BOINC's AVERAGE_VAR::update_var; return the new (n, avg, var, q)."""
    if sample < 0:
        return n, avg, var, q
    if n and avg and sample > avg * limit:
        sample = avg * limit
    n += 1
    delta = sample - avg
    if n < thresh:
        avg += delta / n
        q += delta * (sample - avg)
        var = q / n
    else:
        avg += weight * delta
        var += weight * (delta * delta - var)
    return n, avg, var, q


def low_average(values):
    """Mean where each value is weighted by the sum of the others (damps high outliers)."""
    n = len(values)
    if n == 1:
        return values[0]
    total = sum(values)
    return sum(x * (total - x) for x in values) / ((n - 1) * total)


def pegged_average(values, anchor):
    """Mean weighted by closeness to ``anchor``: w = 1/(0.1 anchor + |anchor - x|)."""
    if len(values) == 1:
        return values[0]
    weights = total = 0.0
    for x in values:
        w = 1.0 / (0.1 * anchor + abs(anchor - x))
        weights += w
        total += w * x
    return total / weights


def compute_avg_turnaround(avg_turnaround, turnaround):
    """host.avg_turnaround after one more turnaround sample (0.7 old + 0.3 new)."""
    if avg_turnaround == 0:
        return float(turnaround)
    return 0.7 * avg_turnaround + 0.3 * turnaround


def generalized_app_version_id(app_version_id, appid):
    """host_app_version.app_version_id of a result: anonymous platform versions
    (negative ids) become ``appid*1000000 - id``."""
    if app_version_id < 0:
        return appid * 1000000 - app_version_id
    return app_version_id


#: GPU-only apps: their versions are scaled as if this much less efficient than
#: a CPU version would be (credit.cpp's DEFAULT_GPU_SCALE)
DEFAULT_GPU_SCALE = 0.1


def app_version_scales(versions):
    """The feeder's update_av_scales for one app: ``(min_avg_pfc, {id: pfc_scale})``.

    ``versions`` are ``(app_version_id, is_gpu, pfc_n, pfc_avg)`` for the app's
    current versions.  Versions with over MIN_VERSION_SAMPLES samples are
    averaged per kind (CPU, GPU); the app is normalised to the lower of the
    two averages when both kinds have such a version, to the CPU average when
    at least two CPU versions do, and to DEFAULT_GPU_SCALE times the GPU
    average when only GPU versions do.  Each version with at least
    MIN_VERSION_SAMPLES samples then gets ``pfc_scale = avg / its pfc_avg``.
    Returns ``(None, {})`` when there is too little to go on.
    """
    sums = {False: [0.0, 0.0, 0], True: [0.0, 0.0, 0]}     # pfc_sum, pfc_n, nvers
    for _, is_gpu, pfc_n, pfc_avg in versions:
        if pfc_n > MIN_VERSION_SAMPLES:
            kind = sums[bool(is_gpu)]
            kind[0] += pfc_avg * pfc_n
            kind[1] += pfc_n
            kind[2] += 1
    (cpu_sum, cpu_n, cpu_vers), (gpu_sum, gpu_n, gpu_vers) = sums[False], sums[True]
    if cpu_vers and gpu_vers:
        avg = min(cpu_sum / cpu_n, gpu_sum / gpu_n)
    elif cpu_vers > 1:
        avg = cpu_sum / cpu_n
    elif gpu_vers:
        avg = gpu_sum / gpu_n * DEFAULT_GPU_SCALE
    else:
        return None, {}
    # BOINC's threshold here is >= while the averages above need >: kept
    scales = {avid: avg / pfc_avg for avid, _, pfc_n, pfc_avg in versions
              if pfc_n >= MIN_VERSION_SAMPLES and pfc_avg > 0}
    return avg, scales


def wu_estimated_pfc(wu, app):
    """The PFC of a workunit when nothing better is known: rsc_fpops_est * min_avg_pfc."""
    x = wu.rsc_fpops_est
    if app.min_avg_pfc:
        x *= app.min_avg_pfc
    return x


class AppVersionCredit(Record):
    """An app_version row plus the samples a validator pass gathered for it
    (BOINC's DB_APP_VERSION_VAL); written back by the validator at the end of a pass."""

    FIELDS = (
        ("id", 0),
        ("pfc_n", 0.0),
        ("pfc_avg", 0.0),
        ("pfc_scale", 0.0),
        ("expavg_credit", 0.0),
        ("expavg_time", 0.0),
        ("pfc_samples", list),
        ("credit_samples", list),        # (sent_time, credit)
    )

    def apply_samples(self, now):
        """Fold the gathered samples into pfc and expavg (write_modified_app_versions)."""
        for x in self.pfc_samples:
            self.pfc_n, self.pfc_avg = average_update(
                self.pfc_n, self.pfc_avg, x, AV_AVG_THRESH, AV_AVG_WEIGHT, AV_AVG_LIMIT)
        for sent_time, credit in self.credit_samples:
            self.expavg_credit, self.expavg_time = update_average(
                now, sent_time, credit, CREDIT_HALF_LIFE, self.expavg_credit, self.expavg_time)


def _pfc_sane(x, wu, app, log):
    if x > 1e4 or x < 1e-4:
        if log:
            log.critical("Bad FLOP ratio (%f): check workunit.rsc_fpops_est for %s (app %s)"
                         % (x, wu.name, app.name))
        return False
    return True


def get_pfc(r, wu, app, avp, hav, log=None, debug=False):
    """Claimed peak FLOP count of a valid result; return (pfc, mode) or None.

    ``r`` (a Result), ``hav`` (a HostAppVersion, or None when the host has no
    row) and ``avp`` (AppVersionCredit of ``r.app_version_id`` or None) are
    updated in place as BOINC's get_pfc does: outlier flags, the host's
    pfc/et/turnaround statistics, the version's samples.  None means the
    result's app version is unknown (BOINC skips the result).
    """
    mode = PFC_MODE_APPROX
    if hav is None:
        return wu_estimated_pfc(wu, app), PFC_MODE_WU_EST
    if r.elapsed_time < 1e-6:
        r.elapsed_time = r.cpu_time     # old clients report CPU time only
    if r.flops_estimate <= 0:
        r.flops_estimate = AVG_CPU_FPOPS
        r.runtime_outlier = 1
        if log:
            log.warning("[RESULT#%d] result has non-pos flops_estimate" % r.id)
    if r.flops_estimate == 1e9:
        # clients whose benchmarks failed report 1 GFLOPS
        r.flops_estimate = AVG_CPU_FPOPS
        r.runtime_outlier = 1
        if log:
            log.warning("[RESULT#%d] result has 1e9 flops_estimate" % r.id)
    raw_pfc = r.elapsed_time * r.flops_estimate

    if r.app_version_id < 0:
        # anonymous platform: scale by the host's own history only
        do_scale = not (hav.pfc_n < MIN_HOST_SAMPLES or hav.pfc_avg <= 0)
        if do_scale and app.host_scale_check and hav.consecutive_valid < CONS_VALID_HOST_SCALE:
            do_scale = False
        if do_scale:
            pfc = raw_pfc * (app.min_avg_pfc / hav.pfc_avg)
        else:
            pfc = wu_estimated_pfc(wu, app)
    else:
        if avp is None:
            if log:
                log.critical("get_pfc() [RESULT#%d]: No AVP %d!!" % (r.id, r.app_version_id))
            return None
        do_scale = True
        host_scale = 0.0
        if app.host_scale_check and hav.consecutive_valid < CONS_VALID_HOST_SCALE:
            do_scale = False
        if do_scale and (hav.pfc_n < MIN_HOST_SAMPLES or hav.pfc_avg == 0):
            do_scale = False
        if do_scale and avp.pfc_n < MIN_VERSION_SAMPLES:
            do_scale = False
        if do_scale and hav.pfc_avg <= 0:
            do_scale = False
        if do_scale:
            host_scale = min(avp.pfc_avg / hav.pfc_avg, 10.0)
        pfc = raw_pfc
        if avp.pfc_scale:
            pfc *= avp.pfc_scale
            if host_scale:
                pfc *= host_scale
                mode = PFC_MODE_NORMAL
        elif host_scale:
            pfc *= host_scale
        x = raw_pfc / wu.rsc_fpops_est
        if not r.runtime_outlier and _pfc_sane(x, wu, app, log):
            avp.pfc_samples.append(x)
        if debug and log:
            log.normal("[credit] [RESULT#%d] [AV#%d] raw PFC %g scale %g host scale %g"
                       % (r.id, avp.id, raw_pfc, avp.pfc_scale, host_scale))

    if not r.runtime_outlier:
        x = raw_pfc / wu.rsc_fpops_est
        if _pfc_sane(x, wu, app, log):
            hav.pfc_n, hav.pfc_avg = average_update(
                hav.pfc_n, hav.pfc_avg, x, HAV_AVG_THRESH, HAV_AVG_WEIGHT, HAV_AVG_LIMIT)
        hav.et_n, hav.et_avg, hav.et_var, hav.et_q = average_var_update(
            hav.et_n, hav.et_avg, hav.et_var, hav.et_q, r.elapsed_time / wu.rsc_fpops_est,
            HAV_AVG_THRESH, HAV_AVG_WEIGHT, HAV_AVG_LIMIT)
        (hav.turnaround_n, hav.turnaround_avg, hav.turnaround_var,
         hav.turnaround_q) = average_var_update(
            hav.turnaround_n, hav.turnaround_avg, hav.turnaround_var, hav.turnaround_q,
            r.received_time - r.sent_time, HAV_AVG_THRESH, HAV_AVG_WEIGHT, HAV_AVG_LIMIT)
    if avp is not None:
        avp.credit_samples.append((r.sent_time, pfc * COBBLESTONE_SCALE))
    return pfc, mode


def assign_credit_set(wu, results, app, av_lookup, havs, max_granted_credit,
                      log=None, debug=False):
    """Credit per valid result of a workunit (BOINC's assign_credit_set).

    ``results`` and ``havs`` are parallel lists (a hav may be None);
    ``av_lookup(app_version_id)`` returns an :class:`AppVersionCredit` or
    None.  Statistics are updated for every VALID result; the return value is
    the pegged average of the "normal" PFCs if there are two or more, else of
    all of them (a single normal one counted twice), times the cobblestone scale.
    """
    normal, approx = [], []
    for r, hav in zip(results, havs):
        if r.validate_state != 1:       # ValidateState.VALID
            continue
        avp = av_lookup(r.app_version_id) if r.app_version_id > 0 else None
        got = get_pfc(r, wu, app, avp, hav, log, debug)
        if got is None:
            continue
        pfc, mode = got
        if pfc > wu.rsc_fpops_bound:
            pfc = wu.rsc_fpops_bound
        if max_granted_credit and pfc * COBBLESTONE_SCALE > max_granted_credit:
            if log:
                log.critical("[credit] Credit too high: %f" % (pfc * COBBLESTONE_SCALE))
            pfc = max_granted_credit / COBBLESTONE_SCALE
            mode = PFC_MODE_INVALID
        if mode == PFC_MODE_NORMAL:
            normal.append(pfc)
        elif mode != PFC_MODE_INVALID:
            approx.append(pfc)
    anchor = wu_estimated_pfc(wu, app)
    if len(normal) >= 2:
        x = pegged_average(normal, anchor)
    else:
        if len(normal) == 1:
            approx += [normal[0], normal[0]]   # a normal PFC weighs double
        x = pegged_average(approx, anchor) if approx else anchor
    credit = x * COBBLESTONE_SCALE
    if debug and log:
        log.normal("[credit] [WU#%d] assign_credit_set: credit %g" % (wu.id, credit))
    return credit


def credit_from_runtime(wu, results, max_granted_credit, log=None):
    """--credit_from_runtime: low average of elapsed_time * flops_estimate credits
    of the results (each must be in (0, max_granted_credit]); 0 if none is."""
    cc = []
    for r in results:
        flops = AVG_CPU_FPOPS if r.flops_estimate == 1e9 else r.flops_estimate
        pfc = flops * r.elapsed_time
        if pfc > wu.rsc_fpops_bound * 2:
            pfc = wu.rsc_fpops_bound
        c = pfc * COBBLESTONE_SCALE
        if c <= 0 or c > max_granted_credit:
            if log:
                log.critical("[WU#%d %s] credit out of range: %f" % (wu.id, wu.name, c))
        else:
            cc.append(c)
        if log:
            log.normal("[WU#%d][RESULT#%d] credit_from_runtime %.2f = %.0fs * %.2fGFLOPS"
                       % (wu.id, r.id, c, r.elapsed_time, flops / 1e9))
    if not cc:
        if log:
            log.critical("[WU#%d %s] credit from runtime: no results have valid credit"
                         % (wu.id, wu.name))
        return 0.0
    return low_average(cc)


class CreditHolder(Record):
    """The credit columns of a host, user or team row (or a credit_user/credit_team row)."""

    FIELDS = (
        ("id", 0),
        ("total_credit", 0.0),
        ("expavg_credit", 0.0),
        ("expavg_time", 0.0),
        ("teamid", 0),                   # users only
        ("userid", 0),                   # hosts only
        ("avg_turnaround", 0.0),         # hosts only
        ("njobs", 0),                    # credit_user / credit_team only
        ("total_added", 0.0),            # credit granted in this transaction
        ("njobs_added", 0),
        ("changed", False),
    )


def grant(holder, now, start_time, credit):
    """Add ``credit`` for work started at ``start_time`` to one holder's totals
    and recent average (what grant_credit does to each of host, user, team)."""
    holder.expavg_credit, holder.expavg_time = update_average(
        now, start_time, credit, CREDIT_HALF_LIFE, holder.expavg_credit, holder.expavg_time)
    holder.total_credit += credit
    holder.total_added += credit
    holder.njobs += 1
    holder.njobs_added += 1
    holder.changed = True
