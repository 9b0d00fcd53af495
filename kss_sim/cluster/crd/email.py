"""The ``email`` format: whether Go's ``net/mail.ParseAddress`` takes a string as one address (strfmt's
``IsEmail``), written after its grammar: an addr-spec (a dot-atom or quoted local part, ``@``, a dot-atom domain or
an IP domain literal) with an optional parenthesised display name after it, or a display phrase with an
``<addr-spec>``, or a group (``name: address;``) of exactly one address; spaces, tabs and comments around them.
Go reads UTF-8 as RFC 6532 allows: any non-ASCII character is printable text. RFC 2047 encoded words are taken as
plain words (their decoding changes the name, never whether the address parses).
"""

from __future__ import annotations

import ipaddress

_SPECIALS = frozenset('()<>[]:;@\\,"')


class _Refused(Exception):
    """The text is not an address."""


def _vchar(char: str) -> bool:
    return "!" <= char <= "~" or ord(char) >= 0x80


def _atext(char: str, dot: bool) -> bool:
    if char == ".":
        return dot
    return char not in _SPECIALS and _vchar(char)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text

    def skip_space(self) -> None:
        self.text = self.text.lstrip(" \t")

    def consume(self, char: str) -> bool:
        if self.text.startswith(char):
            self.text = self.text[1:]
            return True
        return False

    def skip_comments(self) -> bool:
        """CFWS: spaces and (nested, escaped) comments; False for an unclosed comment."""
        self.skip_space()
        while self.consume("("):
            if not self.comment():
                return False
            self.skip_space()
        return True

    def comment(self) -> bool:
        depth = 1
        while self.text and depth:
            if self.text[0] == "\\" and len(self.text) > 1:
                self.text = self.text[1:]
            elif self.text[0] == "(":
                depth += 1
            elif self.text[0] == ")":
                depth -= 1
            self.text = self.text[1:]
        return depth == 0

    def atom(self, *, permissive: bool) -> str:
        """A dot-atom (``permissive``: leading, trailing and double dots allowed, as in a display phrase)."""
        end = 0
        while end < len(self.text) and _atext(self.text[end], True):
            end += 1
        if end == 0:
            raise _Refused
        atom, self.text = self.text[:end], self.text[end:]
        if not permissive and (atom.startswith(".") or atom.endswith(".") or ".." in atom):
            raise _Refused
        return atom

    def quoted(self) -> str:
        """A quoted string (the opening quote not consumed yet)."""
        out, escaped, i = [], False, 1
        while True:
            if i >= len(self.text):
                raise _Refused
            char = self.text[i]
            if escaped:
                if not (_vchar(char) or char in " \t"):
                    raise _Refused
                out.append(char)
                escaped = False
            elif char == '"':
                break
            elif char == "\\":
                escaped = True
            elif _vchar(char) or char in " \t":
                out.append(char)
            else:
                raise _Refused
            i += 1
        self.text = self.text[i + 1 :]
        return "".join(out)

    def domain_literal(self) -> None:
        self.consume("[")
        end = self.text.find("]")
        if end < 0:
            raise _Refused
        literal, self.text = self.text[:end], self.text[end + 1 :]
        if any(not _vchar(c) or c in "[]\\" for c in literal):
            raise _Refused
        try:  # Go's net.ParseIP: no zone, no brackets
            ipaddress.ip_address(literal)
        except ValueError:
            raise _Refused from None
        if "%" in literal:
            raise _Refused

    def addr_spec(self) -> None:
        """local-part ``@`` domain; on failure the text is left as it was."""
        saved = self.text
        try:
            self.skip_space()
            if not self.text:
                raise _Refused
            if self.text.startswith('"'):
                if not self.quoted():
                    raise _Refused  # an empty quoted local part
            else:
                self.atom(permissive=False)
            if not self.consume("@"):
                raise _Refused
            self.skip_space()
            if not self.text:
                raise _Refused
            if self.text.startswith("["):
                self.domain_literal()
            else:
                self.atom(permissive=False)
        except _Refused:
            self.text = saved
            raise

    def phrase(self) -> None:
        """One or more words (atoms, quoted strings); an error after the first word ends the phrase."""
        words = 0
        while True:
            if words and not self.skip_comments():
                raise _Refused
            self.skip_space()
            if not self.text:
                break
            try:
                if self.text.startswith('"'):
                    self.quoted()
                else:
                    self.atom(permissive=True)
            except _Refused:
                break
            words += 1
        if not words:
            raise _Refused

    def address(self, *, group: bool) -> int:
        """One address (``group``: a group may stand here); how many addresses it holds."""
        self.skip_space()
        if not self.text:
            raise _Refused
        try:
            self.addr_spec()
        except _Refused:
            pass
        else:
            self.skip_space()
            if self.text.startswith("("):  # a display name as a comment after the address
                self.consume("(")
                if not self.comment():
                    raise _Refused
            return 1
        if not self.text.startswith("<"):
            self.phrase()
        self.skip_space()
        if group and self.consume(":"):
            return self.group_list()
        if not self.consume("<"):
            raise _Refused
        self.addr_spec()
        if not self.consume(">"):
            raise _Refused
        return 1

    def group_list(self) -> int:
        count = 0
        self.skip_space()
        if self.consume(";"):
            if not self.skip_comments():
                raise _Refused
            return 0
        while True:
            self.skip_space()
            count += self.address(group=False)
            if not self.skip_comments():
                raise _Refused
            if self.consume(";"):
                if not self.skip_comments():
                    raise _Refused
                return count
            if not self.consume(","):
                raise _Refused


def is_email(text: str) -> bool:
    """Whether Go's ``mail.ParseAddress(text)`` finds exactly one address (strfmt's ``email``)."""
    parser = _Parser(text)
    try:
        count = parser.address(group=True)
        if not parser.skip_comments() or parser.text:
            return False
    except _Refused:
        return False
    return count == 1
