"""The ``format``s kube-apiserver checks in custom objects (kss_sim/cluster/crd/formats.py, email.py), case by case
as kube-openapi's strfmt (and Go's net/mail and time.ParseDuration under it) answers them."""

from __future__ import annotations

import pytest

from kss_sim.cluster.crd.formats import format_check

CASES = [
    # isbn: ISBN-10 (its X check digit) or ISBN-13, spaces and dashes ignored, the checksum checked.
    ("isbn", "0306406152", True),
    ("isbn", "0-306-40615-2", True),
    ("isbn", "978-0-306-40615-7", True),
    ("isbn", "080442957X", True),
    ("isbn", "0306406153", False),
    ("isbn", "978-0-306-40615-8", False),
    ("isbn", "isbn 0306406152", False),
    ("isbn10", "978-0-306-40615-7", False),
    ("isbn13", "0306406152", False),
    # creditcard: a known issuer's number (anything but digits dropped), Luhn's sum.
    ("creditcard", "4111 1111 1111 1111", True),
    ("creditcard", "5500-0000-0000-0004", True),
    ("creditcard", "378282246310005", True),
    ("creditcard", "4111111111111112", False),
    ("creditcard", "1234567812345670", False),  # Luhn's sum holds, no issuer starts so
    # email: net/mail.ParseAddress.
    ("email", "a@b", True),
    ("email", "Barry Gibbs <bg@example.com>", True),
    ("email", '"Barry Gibbs" <bg@example.com>', True),
    ("email", "bg@example.com (Barry Gibbs)", True),
    ("email", '"john doe"@example.com', True),
    ("email", "jörg@bücher.de", True),
    ("email", "a@[127.0.0.1]", True),
    ("email", "team: a@b.example;", True),
    ("email", "  a@b.example  ", True),
    ("email", "not-an-address", False),
    ("email", "a..b@example.com", False),
    ("email", ".a@example.com", False),
    ("email", "a@b c", False),
    ("email", "a@[300.1.1.1]", False),
    ("email", '""@example.com', False),
    ("email", "team: a@b.example, c@d.example;", False),
    ("email", "team: ;", False),
    ("email", "a@b, c@d", False),
    ("email", "<a@b", False),
    ("email", "@b", False),
    ("email", "a@", False),
    ("email", "", False),
    # hostname: strfmt's pattern (letters and symbols of any script; no trailing dot), labels to 63 bytes.
    ("hostname", "node-1.example.com", True),
    ("hostname", "localhost", True),
    ("hostname", "a-b", True),
    ("hostname", "münchen.de", True),
    ("hostname", "a+b.example", True),
    ("hostname", "-bad-.example", False),
    ("hostname", "example.com.", False),
    ("hostname", "a-b-c", False),  # one label holds at most one dash
    ("hostname", "host.c0m", False),  # the top-level domain is letters
    ("hostname", "under_score.example", False),
    ("hostname", "x" * 64 + ".example", False),
    ("hostname", ".".join(["a" * 63] * 4) + ".com", False),  # over 255 bytes
    # duration: time.ParseDuration, else strfmt's "<number> <unit>" words anywhere in the text.
    ("duration", "1h30m", True),
    ("duration", "0", True),
    ("duration", "-1.5h", True),
    ("duration", "1.s", True),
    ("duration", "300ms", True),
    ("duration", "2\u00b5s", True),
    ("duration", "3 days", True),
    ("duration", "in 10 minutes please", True),
    ("duration", "2 weeks", True),
    ("duration", "1", False),
    ("duration", "soon", False),
    ("duration", ".", False),
    ("duration", "", False),
    ("duration", "3 months", False),
    ("duration", "2hrs", False),
    ("duration", "99999999999999999999 s", False),
    ("duration", "3000000h", True),  # past int64 nanoseconds for Go, yet the words parse takes it
    # uuid3/4/5: dashes optional, as for uuid.
    ("uuid4", "123e4567-e89b-42d3-a456-426614174000", True),
    ("uuid4", "123e4567e89b42d3a456426614174000", True),
    ("uuid4", "123e4567-e89b-12d3-a456-426614174000", False),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000\n", False),
]


@pytest.mark.parametrize(("name", "text", "valid"), CASES)
def test_a_format_answers_as_strfmt_does(name: str, text: str, valid: bool) -> None:
    check = format_check(name)
    assert check is not None
    assert check(text) is valid
