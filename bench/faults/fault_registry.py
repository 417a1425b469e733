"""The fault matrix's rows, declared once each (bench/faults/fault_rows_*.py): a row's name, the shared
lab it needs and the function that measures it. Selection (--only), which shared labs start,
the order of the run and of the table, and the list of known names all come from here.
"""

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Row:
    """One entry of the matrix. `names`: the table rows it produces, in order (most produce one;
    a sequence whose second row depends on the first produces both, and runs whole when any of
    them is selected). `lab`: the shared lab it measures against ("pg", "redis"), or None when
    it starts its own. `run(matrix, *names)` measures and appends the table lines."""

    names: tuple
    lab: str
    run: Callable


class Rows(list):
    """Rows in table order; `@rows.row(name, lab=...)` declares a function as one. Built from
    other rows (Rows([*a, *b])), it refuses a name declared twice there too."""

    def __init__(self, rows=()):
        super().__init__()
        for r in rows:
            self.add(*r.names, lab=r.lab, run=r.run)

    def row(self, *names, lab):
        """Decorator: declare `fn(matrix, *names)` as the row(s) `names`."""
        def declare(fn):
            self.add(*names, lab=lab, run=fn)
            return fn
        return declare

    def add(self, *names, lab, run):
        """Declare `run(matrix, *names)` as the row(s) `names` (a name must be new)."""
        taken = set(self.names()) & set(names)
        if taken:
            raise ValueError(f"fault rows declared twice: {sorted(taken)}")
        self.append(Row(tuple(names), lab, run))

    def names(self):
        """Every row name, in table order."""
        return [n for r in self for n in r.names]

    def selected(self, only):
        """The rows to run: all, or those producing any name of `only` (a set)."""
        return Rows(r for r in self if not only or only & set(r.names))

    def labs(self):
        """The shared labs these rows need, in the order of first need."""
        return list(dict.fromkeys(r.lab for r in self if r.lab))
