"""BOINC's credit arithmetic (boincpy.credit), checked against numbers worked out by hand."""

import math

import pytest

from boincpy import credit
from boincpy.db.rows import App, HostAppVersion, Result, Workunit

DAY = 86400.0


def test_update_average_first_sample_and_decay():
    # first sample: 10 credits over the 2 days since the work started
    avg, t = credit.update_average(1000 + 2 * DAY, 1000, 10.0, 7 * DAY, 0.0, 0.0)
    assert (avg, t) == (5.0, 1000 + 2 * DAY)
    # one half-life later with no work: halved
    avg2, _ = credit.update_average(t + 7 * DAY, 0, 0.0, 7 * DAY, avg, t)
    assert avg2 == pytest.approx(2.5)
    # one half-life later with 14 credits: 5/2 + (1/2) * 14/7
    avg3, _ = credit.update_average(t + 7 * DAY, 0, 14.0, 7 * DAY, avg, t)
    assert avg3 == pytest.approx(2.5 + 1.0)
    # same instant: the dt -> 0 limit, ln2 * work * day / half-life
    avg4, _ = credit.update_average(t, 0, 7.0, 7 * DAY, avg, t)
    assert avg4 == pytest.approx(5.0 + math.log(2))


def test_average_update_threshold_weight_and_limit():
    n, avg = 0, 0.0
    for x in (2.0, 4.0, 6.0):               # arithmetic mean below the threshold
        n, avg = credit.average_update(n, avg, x, 20, 0.01, 10)
    assert (n, avg) == (3, 4.0)
    n, avg = credit.average_update(n, avg, 1000.0, 20, 0.01, 10)   # clamped to 40
    assert avg == pytest.approx(4.0 + (40.0 - 4.0) / 4)
    assert credit.average_update(n, avg, -1, 20, 0.01, 10) == (n, avg)  # ignored
    n, avg = credit.average_update(19, 10.0, 20.0, 20, 0.01, 10)    # exponential from 20
    assert (n, avg) == (20, pytest.approx(10.1))


def test_average_var_update():
    n = avg = var = q = 0.0
    for x in (1.0, 3.0):
        n, avg, var, q = credit.average_var_update(n, avg, var, q, x, 20, 0.01, 10)
    assert (n, avg) == (2, 2.0)
    assert var == pytest.approx(1.0)        # population variance of 1 and 3


def test_low_and_pegged_average():
    assert credit.low_average([5.0]) == 5.0
    # weights are the sums of the others: (1*3 + 3*1) / (1 * 4)
    assert credit.low_average([1.0, 3.0]) == pytest.approx(1.5)
    # anchor 10: w(9) = 1/(1+1), w(13) = 1/(1+3)
    assert credit.pegged_average([9.0, 13.0], 10.0) == pytest.approx(
        (9 / 2 + 13 / 4) / (1 / 2 + 1 / 4))


def _setup(pfc_scale=0.0, av_n=0.0, av_avg=0.0, hav_n=0.0, hav_avg=0.0, cons=0):
    wu = Workunit(id=1, name="w", rsc_fpops_est=1e12, rsc_fpops_bound=1e14)
    app = App(id=1, name="a", min_avg_pfc=1.0)
    av = credit.AppVersionCredit(id=7, pfc_n=av_n, pfc_avg=av_avg, pfc_scale=pfc_scale)
    hav = HostAppVersion(host_id=1, app_version_id=7, pfc_n=hav_n, pfc_avg=hav_avg,
                         consecutive_valid=cons)
    return wu, app, av, hav


def test_normal_mode_uses_version_and_host_scale():
    wu, app, av, hav = _setup(pfc_scale=0.5, av_n=200, av_avg=2.0, hav_n=20, hav_avg=4.0)
    r = Result(id=1, validate_state=1, elapsed_time=100.0, flops_estimate=2e10,
               app_version_id=7, sent_time=0, received_time=500)
    pfc, mode = credit.get_pfc(r, wu, app, av, hav)
    # raw 2e12 x version scale 0.5 x host scale 2/4
    assert (pfc, mode) == (pytest.approx(5e11), credit.PFC_MODE_NORMAL)
    assert av.pfc_samples == [2.0]                        # raw / rsc_fpops_est
    assert hav.pfc_n == 21 and hav.pfc_avg == pytest.approx(4.0 + 0.01 * (2.0 - 4.0))
    assert av.credit_samples == [(0, pytest.approx(5e11 * credit.COBBLESTONE_SCALE))]


def test_host_scale_needs_samples_and_consecutive_valid():
    wu, app, av, hav = _setup(pfc_scale=0.5, av_n=200, av_avg=2.0, hav_n=5, hav_avg=4.0)
    r = Result(id=1, validate_state=1, elapsed_time=100.0, flops_estimate=2e10, app_version_id=7)
    assert credit.get_pfc(r, wu, app, av, hav) == (pytest.approx(1e12), credit.PFC_MODE_APPROX)
    wu, app, av, hav = _setup(pfc_scale=0.5, av_n=200, av_avg=2.0, hav_n=20, hav_avg=4.0, cons=3)
    app.host_scale_check = 1
    r = Result(id=1, validate_state=1, elapsed_time=100.0, flops_estimate=2e10, app_version_id=7)
    assert credit.get_pfc(r, wu, app, av, hav)[1] == credit.PFC_MODE_APPROX


def test_assign_credit_set_weighting():
    wu, app, av, _ = _setup()
    results = [Result(id=i, validate_state=1, elapsed_time=e, flops_estimate=1e10,
                      app_version_id=7) for i, e in ((1, 80.0), (2, 150.0))]
    havs = [HostAppVersion(host_id=i, app_version_id=7) for i in (1, 2)]
    c = credit.assign_credit_set(wu, results, app, lambda i: av, havs, 1e9)
    assert c == pytest.approx(credit.pegged_average([8e11, 1.5e12], 1e12)
                              * credit.COBBLESTONE_SCALE)
    # no host_app_version row: the workunit's estimate
    r = Result(id=3, validate_state=1, elapsed_time=999.0, flops_estimate=1e10, app_version_id=7)
    assert credit.assign_credit_set(wu, [r], app, lambda i: av, [None], 1e9) == \
        pytest.approx(1e12 * credit.COBBLESTONE_SCALE)
    # over max_granted_credit: ignored in the average, the estimate is used
    r = Result(id=4, validate_state=1, elapsed_time=1e4, flops_estimate=1e10, app_version_id=7)
    assert credit.assign_credit_set(wu, [r], app, lambda i: av,
                                    [HostAppVersion(host_id=4)], 0.5) == \
        pytest.approx(1e12 * credit.COBBLESTONE_SCALE)


def test_generalized_app_version_id_and_turnaround():
    assert credit.generalized_app_version_id(12, 3) == 12
    assert credit.generalized_app_version_id(-2, 3) == 3000002
    assert credit.compute_avg_turnaround(0, 100) == 100
    assert credit.compute_avg_turnaround(100, 200) == pytest.approx(130)
