"""Messages (afbench.core.errors): escaped, one line, short."""

from __future__ import annotations

from afbench.core.errors import AfbenchError, Problem


# 4. surrogates and control characters in messages and outputs ------------------------------
def test_messages_escape_surrogates_and_control_characters_and_stay_short():
    problem = Problem(
        "bad\nname \udc80",
        file="/tmp/x\udcff\n.json",
        field="a\x1b[31m",
        found="y" * 10_000 + "\udc80",
    )
    text = str(AfbenchError(problems=[problem]))
    text.encode("utf-8")  # strict: no lone surrogate left
    assert "\n" not in text and "\x1b" not in text
    assert r"\udcff" in text and r"\n" in text and r"\x1b" in text
    assert len(text) < 1500
