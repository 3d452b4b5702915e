"""The user's project preferences as job choice reads them (boincpy.sched.prefs)."""

from boincpy.sched.prefs import parse_project_prefs, prefs_body

PREFS = ("<project_preferences><apps_selected><app_id>1</app_id></apps_selected><no_gpus/>"
         "<venue name=\"home\"><apps_selected><app_id>2</app_id><app_id>3</app_id>"
         "</apps_selected><allow_beta_work>1</allow_beta_work><max_jobs>4</max_jobs>"
         "</venue></project_preferences>")


def test_the_hosts_venue_block_is_read():
    prefs = parse_project_prefs(PREFS, "home")
    assert sorted(prefs.selected_apps) == [2, 3]
    assert prefs.allow_beta_work and prefs.max_jobs_in_progress == 4
    assert prefs.dont_use_proc_type == [False] * 5       # no_gpus is outside the venue


def test_a_venue_the_prefs_lack_reads_them_without_any_venue_block():
    # BOINC's extract_venue: not the whole text, which would mix the venues in
    for venue in ("work", ""):
        body = prefs_body(PREFS, venue)
        assert "<venue" not in body and "<app_id>1</app_id>" in body
        prefs = parse_project_prefs(PREFS, venue)
        assert list(prefs.selected_apps) == [1] and not prefs.allow_beta_work
        assert prefs.dont_use_proc_type == [False] + [True] * 4


def test_no_prefs():
    assert prefs_body(None, "home") == "" and prefs_body("<a/>", "") == "<a/>"
    prefs = parse_project_prefs("", "")
    assert prefs.selected_apps == {} and prefs.max_cpus == 0
