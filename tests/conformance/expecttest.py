"""A stand-in for the expecttest package, which Debian does not ship and
PyTorch's test internals import (torch.testing._internal.common_utils):
opinfo.py needs only the module to exist, with the names common_utils reads
at import time.  Expect-tests themselves are never run here."""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    """The base class common_utils.TestCase derives from."""
