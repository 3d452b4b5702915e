"""BOINC's running averages (lib/average.h): AVERAGE and AVERAGE_VAR.

Host statistics (host_app_version.turnaround_*, et_*, pfc_*) are kept as a
sample count ``n``, an average ``avg`` and, for AVERAGE_VAR, a variance
``var`` with its accumulator ``q``.  The first ``thresh`` samples give the
arithmetic mean, later ones an exponential average with weight ``weight``;
a sample above ``avg * limit`` is clamped, a negative one ignored.

Same names and signatures as ``boincpy.credit``'s on the backend2 branch:
once both are on main this module goes and its users import from there.
"""

# host_app_version statistics (sched/credit.h)
HAV_AVG_THRESH, HAV_AVG_WEIGHT, HAV_AVG_LIMIT = 20, 0.01, 10


def average_update(n, avg, sample, thresh, weight, limit):
    """BOINC's AVERAGE::update; return the new (n, avg)."""
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
