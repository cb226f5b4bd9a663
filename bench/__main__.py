"""Run the benchmarks and regenerate bench/RESULTS.md.

    python -m bench             # everything (make bench)
    python -m bench --quick     # small sizes, for a quick look
    python -m bench verify_scaling
    python -m bench --data PATH meclear_locomo   # LoCoMo (or MEMSTEWARD_LOCOMO_DIR=PATH)

The LoCoMo benchmarks read the conversations in place from ``--data`` or ``MEMSTEWARD_LOCOMO_DIR``
(no default). Named without it they stop with exit 2; in a full run their sections say "Skipped".
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import time

from .common import assemble
from .meclear_locomo import MissingData, require_data

ORDER = ["verify_scaling", "check_scaling", "check_limits", "g5_machine", "meclear_cohort", "meclear_calls", "meclear_locomo",
         "meclear_llm", "meclear_overhead", "meclear_budget", "repair_policies", "repair_frontier", "repair_scale",
         "repair_lineage", "write_path", "cli_startup", "lineage_scale", "store_backends", "store_writers", "repair_executors",
         "mcp_roundtrip", "langgraph_adapter", "store_dryrun", "store_split", "shred_scale"]
LOCOMO = ("meclear_locomo", "meclear_llm")  # useless without the data: named alone, they need it


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"subset of {ORDER}")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a quick look")
    ap.add_argument("--data", default=None, metavar="PATH",
                    help="the LoCoMo directory (conv-*.json); default $MEMSTEWARD_LOCOMO_DIR")
    args = ap.parse_args(argv)
    names = args.names or ORDER
    unknown = [n for n in names if n not in ORDER]
    if unknown:
        ap.error(f"unknown benchmark(s) {unknown}; choose from {ORDER}")
    if args.names and set(names) & set(LOCOMO):
        try:
            require_data(args.data)
        except MissingData as exc:
            ap.error(f"{', '.join(n for n in names if n in LOCOMO)}: {exc}")
    for name in names:
        start = time.perf_counter()
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        run = importlib.import_module(f"bench.{name}").run
        if "data" in inspect.signature(run).parameters:
            run(quick=args.quick, data=args.data)
        else:
            run(quick=args.quick)
        print(f"[bench] {name} done in {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)
    assemble(ORDER)
    print("wrote bench/RESULTS.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
