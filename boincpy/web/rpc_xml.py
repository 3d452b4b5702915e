"""The replies of BOINC's web RPCs: XML declaration, ``<error>`` blocks.

BOINC's RPC handlers are PHP pages; a client sees only the parameters they
read (:mod:`boincpy.web.http`) and the bytes they print.  This module keeps
those bytes: the XML declaration PHP's ``xml_header()`` prints, the
``<error>`` block of ``xml_error()`` with BOINC's default message for each
error number, and PHP's ``Content-Type: text/xml;charset=UTF-8``.
"""

from boincpy.web.http import HTML_CONTENT_TYPE, BadRequest, Response
from boincpy.xml import xml_escape

# lib/error_numbers.h (the subset the web RPCs use).
ERR_XML_PARSE = -112
ERR_DB_NOT_FOUND = -136
ERR_DB_NOT_UNIQUE = -137
ERR_DB_CANT_CONNECT = -138
ERR_PROJECT_DOWN = -183
ERR_BAD_USER_NAME = -188
ERR_BAD_EMAIL_ADDR = -205
ERR_BAD_PASSWD = -206
ERR_ACCT_CREATION_DISABLED = -208
ERR_ATTACH_FAIL_INIT = -209
ERR_ACCT_REQUIRE_CONSENT = -242

# xml_error()'s message when the caller gives none.
DEFAULT_MESSAGES = {
    -112: "Invalid XML",
    -136: "Not found",
    -137: "Name or email address is not unique",
    -138: "Can't access database",
    -183: "Project is temporarily offline",
    -205: "Email address has invalid syntax",
    -206: "Invalid password",
    -207: "Email address is not unique",
    -208: "Account creation is disabled",
    -209: "Invalid invitation code",
    -210: "Invalid request method",
}

XML_DECLARATION = '<?xml version="1.0" encoding="ISO-8859-1" ?>\n'
XML_CONTENT_TYPE = "text/xml;charset=UTF-8"


class RpcError(BadRequest):
    """An ``<error>`` reply: BOINC error number and message.  (Any
    BadRequest a page raises is answered the same way, its number -1.)"""

    def __init__(self, num=-1, msg=None):
        super().__init__(msg or DEFAULT_MESSAGES.get(num, "Unknown error"), num)

    @property
    def msg(self):
        return self.message


def error_xml(num, msg):
    """The ``<error>`` block xml_error() prints."""
    return ("<error>\n    <error_num>%d</error_num>\n    <error_msg>%s</error_msg>\n</error>\n"
            % (num, xml_escape(msg)))


def php_float(value):
    """A number as PHP's echo prints a float (precision 14: %.14G, exponent
    as ``1.0E+25``); integers as they are."""
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NAN"
    if value in (float("inf"), float("-inf")):
        return "INF" if value > 0 else "-INF"
    text = "%.14G" % value
    if "E" in text:
        mantissa, exponent = text.split("E")
        if "." not in mantissa:
            mantissa += ".0"
        return "%sE%+d" % (mantissa, int(exponent))
    return text


def xml_response(body, header=True):
    """An XML reply; ``header`` adds the XML declaration xml_header() prints."""
    return Response((XML_DECLARATION if header else "") + body, XML_CONTENT_TYPE)


def error_response(err, header=True):
    """The reply to a BadRequest (an RpcError or a missing parameter): with
    the XML declaration when the page had printed it (xml_header) before
    failing, else PHP's bare text/html block."""
    if header:
        return xml_response(error_xml(err.num, err.message))
    return Response(error_xml(err.num, err.message), content_type=HTML_CONTENT_TYPE)


