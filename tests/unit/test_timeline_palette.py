"""The timeline's owner colours stay apart from the colours that carry a meaning of their own."""
from harness.report.timeline import PALETTE


def _rgb(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


def test_no_owner_colour_is_orange_or_red_like_the_broker_and_violation_marks():
    for c in PALETTE:
        r, g, b = _rgb(c)
        assert not (r > 200 and r - b > 60), f"{c} reads as orange or red"


def test_owner_colours_are_distinct():
    assert len(set(PALETTE)) == len(PALETTE) >= 12
