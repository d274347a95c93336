"""What the demo agent makes of a spoken message: the user's words as the host wrote them out
(PocketSphinx writes numbers as words, lowercase, with no punctuation), with numbers said in
words put in digits, so that "focus twenty five" asks what "focus 25" asks.

Numbers up to 999: a unit or a teen ("seven", "fifteen"), a ten and a unit ("twenty five"),
and hundreds ("one hundred twenty"). A word that does not go on the number before it starts
a new one ("five five" is 5 and 5).
"""

from __future__ import annotations

from typing import Final

_UNITS: Final = {
    word: value
    for value, word in enumerate((
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen",
    ))
}  # fmt: skip
_TENS: Final = {
    word: value * 10
    for value, word in enumerate(
        ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), start=2
    )
}


def with_digits(text: str) -> str:
    """`text` with each number said in words written in digits."""
    out: list[str] = []
    number: int | None = None
    step = ""  # what the number so far ends with: unit, teen, ten, hundred, whole

    def flush() -> None:
        nonlocal number, step
        if number is not None:
            out.append(str(number))
        number, step = None, ""

    for word in text.split():
        said = word.lower().strip(".,!?;:")
        unit, ten = _UNITS.get(said), _TENS.get(said)
        if number is not None and step == "ten" and unit is not None and 0 < unit < 10:
            number, step = number + unit, "whole"
        elif number is not None and step == "unit" and said == "hundred":
            number, step = number * 100, "hundred"
        elif number is not None and step == "hundred" and ten is not None:
            number, step = number + ten, "ten"
        elif number is not None and step == "hundred" and unit is not None:
            number, step = number + unit, "whole"
        elif unit is not None:
            flush()
            number, step = unit, "unit" if 0 < unit < 10 else "teen"
        elif ten is not None:
            flush()
            number, step = ten, "ten"
        else:
            flush()
            out.append(word)
    flush()
    return " ".join(out)
