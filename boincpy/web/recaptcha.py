"""reCAPTCHA, as BOINC's html/inc/recaptchalib.inc uses it: off unless
config.xml sets ``<recaptcha_private_key>``; then a form that asks for it
(the sign-up; a page of the message boards may too) is accepted only if the
verifier says the form's ``g-recaptcha-response`` is good.

The verifier is asked as BOINC asks Google's: a GET of
``<recaptcha_verify_url>?secret=KEY&response=RESPONSE&remoteip=ADDR``, whose
JSON reply is good when its ``success`` is true.  A verifier that can't be
reached, answers an error or no JSON refuses the form (nothing is made).

The widget itself is Google's script (:func:`recaptcha_html` writes the box
BOINC writes; :data:`SCRIPTS` is what a page passes to ``render(scripts=)``,
whose Content-Security-Policy then allows Google's origins on that page
only; every other page allows no script).
"""

import sys
import urllib.parse

from boincpy.web.markup import Markup, fmt

RESPONSE_FIELD = "g-recaptcha-response"
# the widget's script and the origins it loads from (web/page.security_headers)
SCRIPTS = (("https://www.google.com/recaptcha/api.js",
            ("https://www.google.com", "https://www.gstatic.com",
             "https://recaptcha.google.com")),)
TIMEOUT = 10            # seconds to wait for the verifier
REFUSED = "Your reCAPTCHA response was not correct. Please try again."


def enabled(cfg):
    """Whether forms must pass the reCAPTCHA check (a secret key is set)."""
    return bool(getattr(cfg, "recaptcha_private_key", ""))


def recaptcha_html(cfg):
    """The reCAPTCHA box of a form (empty when there is no site key)."""
    key = getattr(cfg, "recaptcha_public_key", "")
    if not key:
        return Markup("")
    return fmt('<div class="g-recaptcha" data-sitekey="{}"></div>', key)


def verify(cfg, response, remote_addr):
    """Ask the verifier about one response; True if it says ``success``."""
    # imported here: the sign-up page imports this module on every request,
    # and urllib.request brings http.client, email and ssl (~30 ms for a CGI),
    # json another 1.4 ms
    import json
    import urllib.error
    import urllib.request
    if not response:
        return False            # the verifier's "missing-input-response"
    query = urllib.parse.urlencode({"secret": cfg.recaptcha_private_key,
                                    "response": response, "remoteip": remote_addr or ""})
    base = cfg.recaptcha_verify_url
    address = base + ("&" if "?" in base else "?") + query
    try:
        with urllib.request.urlopen(address, timeout=TIMEOUT) as reply:
            answer = json.loads(reply.read(65536).decode("utf-8", "replace"))
    except (OSError, ValueError, urllib.error.URLError) as exc:
        sys.stderr.write("reCAPTCHA verifier %s not usable: %s\n" % (base, exc))
        return False
    return isinstance(answer, dict) and answer.get("success") is True


def recaptcha_check(cfg, req):
    """BOINC's check of a posted form: True when reCAPTCHA is off or the
    verifier accepts the form's response, else False (refuse the form with
    :data:`REFUSED`)."""
    if not enabled(cfg):
        return True
    return verify(cfg, req.post(RESPONSE_FIELD), req.remote_addr)
