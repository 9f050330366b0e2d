"""What torch's test helpers import from the expecttest package, which Debian
does not ship: a TestCase base and the ACCEPT switch. The distributed suite
never compares against recorded output, so nothing more is needed."""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    pass
