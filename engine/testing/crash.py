"""``python -m memsteward.testing.crash N ARGS…``: the ``memsteward`` command line, with every store it
opens killed (SIGKILL) at its N-th checkpoint (:func:`memsteward.store.crashing.crash_at_checkpoint`).

The crash tests run it as a child process, as SQLite's tests run a crashing VFS: the store has no
crash switch of its own.
"""

from __future__ import annotations

import sys

from ..errors import EXIT_BAD_INPUT


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args or not args[0].isdigit() or int(args[0]) < 1:
        print("usage: python -m memsteward.testing.crash N memsteward-arguments…  (N ≥ 1)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    from ..store.crashing import crash_at_checkpoint

    crash_at_checkpoint(int(args[0]))
    sys.argv = ["memsteward", *args[1:]]
    from ..cli import run

    run()


if __name__ == "__main__":
    main()
