"""BOINC's running averages (lib/average.h): AVERAGE and AVERAGE_VAR.

Host and app-version statistics (host_app_version.pfc_*, et_*, turnaround_*;
app_version.pfc_*) are kept as a sample count ``n``, an average ``avg`` and,
for AVERAGE_VAR, a variance ``var`` with its accumulator ``q``.  The first
``n_threshold`` samples give the arithmetic mean, later ones an exponential
average with weight ``sample_weight``; a sample above ``avg * sample_limit``
is clamped, a negative one ignored.

The thresholds BOINC uses (sched/credit.h):
"""

# host_app_version statistics
HAV_AVG_THRESH = 20
HAV_AVG_WEIGHT = 0.01
HAV_AVG_LIMIT = 10
# app_version statistics
AV_AVG_THRESH = 100
AV_AVG_WEIGHT = 0.001
AV_AVG_LIMIT = 10


def update(n, avg, sample, n_threshold, sample_weight, sample_limit):
    """One AVERAGE update; returns ``(n, avg, truncated)``."""
    if sample < 0:
        return n, avg, True
    truncated = False
    if n and avg and sample > avg * sample_limit:
        sample = avg * sample_limit
        truncated = True
    n += 1
    delta = sample - avg
    if n < n_threshold:
        avg += delta / n
    else:
        avg += sample_weight * delta
    return n, avg, truncated


def update_var(n, avg, var, q, sample, n_threshold, sample_weight, sample_limit):
    """One AVERAGE_VAR update; returns ``(n, avg, var, q, truncated)``."""
    if sample < 0:
        return n, avg, var, q, True
    truncated = False
    if n and avg and sample > avg * sample_limit:
        sample = avg * sample_limit
        truncated = True
    n += 1
    delta = sample - avg
    if n < n_threshold:
        avg += delta / n
        q += delta * (sample - avg)
        var = q / n
    else:
        avg += sample_weight * delta
        var += sample_weight * (delta * delta - var)
    return n, avg, var, q, truncated
