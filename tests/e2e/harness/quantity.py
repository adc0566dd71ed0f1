"""Kubernetes quantities as exact Fractions, independent of lib/quantity (test oracle)."""
import re
from fractions import Fraction

_SUFFIX = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_RE = re.compile(r"^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?)$")


def parse(s):
    """Exact value of a quantity string (no rounding: fixtures use plain values)."""
    m = _RE.match(s)
    if not m:
        raise ValueError("not a quantity: %r" % s)
    num = Fraction(m.group(1))
    if m.group(2):
        return num * Fraction(10) ** int(m.group(2)[1:])
    return num * _SUFFIX[m.group(3) or ""]
