"""Every exception class boincpy defines derives from the one base, BoincpyError."""

import importlib
import inspect
import pkgutil

import boincpy
from boincpy.errors import BoincpyError, Signal


def _modules():
    for info in pkgutil.walk_packages(boincpy.__path__, "boincpy."):
        yield importlib.import_module(info.name)


def test_every_exception_class_derives_from_the_base():
    found, outside = [], []
    for module in _modules():
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, BaseException):
                continue
            if issubclass(cls, Warning):
                continue            # warnings are issued, not raised (config.ConfigWarning)
            found.append("%s.%s" % (module.__name__, name))
            if not issubclass(cls, (BoincpyError, Signal)):
                outside.append("%s.%s" % (module.__name__, name))
    assert outside == []
    # the walk reached the modules that define their own errors
    for name in ("boincpy.upload.UploadError", "boincpy.web.rpc_xml.RpcError",
                 "boincpy.sched.request.RequestError", "boincpy.testing.client.ClientError"):
        assert name in found


def test_errors_keep_the_builtin_bases_callers_catch():
    from boincpy.hrclass import HrInfoError
    from boincpy.submit.gahp import Malformed
    from boincpy.testing.client import ClientError
    from boincpy.web.multipart import MultipartError
    for cls, builtin in ((HrInfoError, ValueError), (Malformed, ValueError),
                         (MultipartError, ValueError), (ClientError, RuntimeError)):
        assert issubclass(cls, builtin) and issubclass(cls, BoincpyError)
        exc = cls("what went wrong")
        assert str(exc) == "what went wrong" and exc.args == ("what went wrong",)


def test_errors_with_their_own_fields_still_read_as_their_message():
    from boincpy.upload import UploadError
    from boincpy.web.rpc_xml import RpcError
    from boincpy.web.page import PageError
    assert str(UploadError(-1, "bad file")) == "bad file"
    err = RpcError(-136, "no such user")
    assert (err.num, err.msg, str(err)) == (-136, "no such user", "no such user")
    assert str(PageError("nope", "404 Not Found")) == "nope"
