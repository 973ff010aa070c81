"""Text to LaTeX that compiles with pdflatex and the LaTeX kernel alone.

:func:`latex_escape` turns any Python string (model names, method names, flags,
settings) into pure-ASCII LaTeX source that needs no package: the ten special
characters are escaped, the symbols calipers' own text uses (``∞``, ``→``, ``≥``,
``±``, ...) become math-mode commands, accented Latin letters become accent
commands (``Błasiok`` -> ``B\\l{}asiok``, ``é`` -> ``\\'{e}``), Greek letters become
math letters, and any other character is written visibly as ``[U+XXXX]`` rather than
dropped or left to fail. Only commands of the OT1 text encoding and of math mode are
used, so nothing falls back to bitmap fonts (``\\$``, ``\\S`` and ``\\P``, whose text
forms live in the TS1 encoding, are written in math mode).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["latex_escape"]

# the characters LaTeX treats specially, and the ASCII ligatures of the OT1 fonts
# that would change what is printed ("--" en dash, "?`" inverted question mark, ...)
_ASCII = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"{$\$$}",  # text-mode \$ is TS1's \textdollar (a bitmap font in pdflatex)
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "[": "{[}",  # braced: never read as an optional argument (after \item or \\)
    "]": "{]}",
    '"': "''",
    "`": "{`}",
    "'": "{'}",
    "\n": " ",
    "\r": " ",
    "\t": " ",
}

# multi-character tokens, matched before single characters
_TOKENS = {
    "->": r"{$\rightarrow$}",
    "<-": r"{$\leftarrow$}",
    "-∞": r"{$-\infty$}",
    "--": "-{}-",
}

_UNICODE = {
    "∞": r"{$\infty$}",
    "→": r"{$\rightarrow$}",
    "←": r"{$\leftarrow$}",
    "↔": r"{$\leftrightarrow$}",
    "⇒": r"{$\Rightarrow$}",
    "≥": r"{$\geq$}",
    "≤": r"{$\leq$}",
    "≠": r"{$\neq$}",
    "≈": r"{$\approx$}",
    "±": r"{$\pm$}",
    "×": r"{$\times$}",
    "÷": r"{$\div$}",
    "·": r"{$\cdot$}",
    "•": r"{$\bullet$}",
    "−": r"{$-$}",
    "√": r"{$\surd$}",
    "∑": r"{$\sum$}",
    "∈": r"{$\in$}",
    "°": r"{$^{\circ}$}",
    "µ": r"{$\mu$}",
    "²": r"{$^{2}$}",
    "³": r"{$^{3}$}",
    "¹": r"{$^{1}$}",
    "½": r"{$\frac{1}{2}$}",
    "§": r"{$\S$}",
    "¶": r"{$\P$}",
    "–": "--",
    "—": "---",
    "…": r"\dots{}",
    "‘": "`",
    "’": "'",
    "“": "``",
    "”": "''",
    "\u00a0": "~",
    "ł": r"\l{}",
    "Ł": r"\L{}",
    "ø": r"\o{}",
    "Ø": r"\O{}",
    "ß": r"\ss{}",
    "æ": r"\ae{}",
    "Æ": r"\AE{}",
    "œ": r"\oe{}",
    "Œ": r"\OE{}",
    "ı": r"\i{}",
    "¿": "?`",
    "¡": "!`",
}

# combining marks and the OT1 accent commands that draw them
_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u0308": '"',
    "\u030a": "r",
    "\u030b": "H",
    "\u030c": "v",
    "\u0323": "d",
    "\u0327": "c",
    "\u0331": "b",
}

_GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
    "kappa", "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon",
    "phi", "chi", "psi", "omega",
}  # fmt: skip
_GREEK_UPPER = {"gamma", "delta", "theta", "lambda", "xi", "pi", "sigma", "upsilon", "phi", "psi", "omega"}  # fmt: skip

_PATTERN = re.compile("|".join(re.escape(t) for t in _TOKENS) + "|.", re.DOTALL)


def _char(ch: str) -> str:
    if ch in _ASCII:
        return _ASCII[ch]
    if ch.isascii():
        return ch
    if ch in _UNICODE:
        return _UNICODE[ch]
    decomposed = unicodedata.normalize("NFD", ch)
    base, marks = decomposed[0], decomposed[1:]
    if base.isascii() and base.isalpha() and marks and all(m in _ACCENTS for m in marks):
        out = r"\i" if base == "i" and marks else base  # dotless i under an accent
        for m in marks:
            out = "\\" + _ACCENTS[m] + "{" + out + "}"
        return "{" + out + "}"
    name = unicodedata.name(ch, "")
    for prefix, upper in (("GREEK SMALL LETTER ", False), ("GREEK CAPITAL LETTER ", True)):
        if name.startswith(prefix):
            letter = name[len(prefix) :].lower().replace("lamda", "lambda")
            if letter in _GREEK and (not upper or letter in _GREEK_UPPER):
                cmd = letter.capitalize() if upper else letter
                return "{$\\" + cmd + "$}"
            if upper and letter in _GREEK:  # capitals drawn as Latin letters (A, B, E, ...)
                return {"alpha": "A", "beta": "B", "epsilon": "E", "zeta": "Z", "eta": "H",
                        "iota": "I", "kappa": "K", "mu": "M", "nu": "N", "rho": "P",
                        "tau": "T", "chi": "X"}[letter]  # fmt: skip
    return f"\\texttt{{[U+{ord(ch):04X}]}}"


def latex_escape(text: str) -> str:
    """``text`` as pure-ASCII LaTeX source for text mode, needing no package.

    Examples
    --------
    >>> print(latex_escape("a_b & 50% #1 $x$ {y} ~z^2 \\\\"))
    a\\_b \\& 50\\% \\#1 {$\\$$}x{$\\$$} \\{y\\} \\textasciitilde{}z\\textasciicircum{}2 \\textbackslash{}
    >>> print(latex_escape("Błasiok → ∞, p < 0.005, x ≥ 1, é"))
    B\\l{}asiok {$\\rightarrow$} {$\\infty$}, p \\textless{} 0.005, x {$\\geq$} 1, {\\'{e}}
    >>> print(latex_escape("模型"))
    \\texttt{[U+6A21]}\\texttt{[U+578B]}
    """
    return _PATTERN.sub(lambda m: _TOKENS.get(m.group(0)) or _char(m.group(0)), str(text))
