"""Run the benchmarks and regenerate bench/RESULTS.md.

    python -m bench             # everything (make bench)
    python -m bench --quick     # small sizes, for a quick look
    python -m bench verify_scaling
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time

from .common import assemble

ORDER = ["verify_scaling", "check_scaling", "g5_machine", "meclear_cohort", "meclear_calls", "meclear_locomo",
         "meclear_llm", "meclear_overhead", "meclear_budget", "repair_policies", "repair_frontier", "repair_scale",
         "repair_lineage", "write_path", "cli_startup", "lineage_scale", "store_backends", "repair_executors",
         "mcp_roundtrip", "langgraph_adapter", "store_dryrun", "store_split"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"subset of {ORDER}")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a quick look")
    args = ap.parse_args(argv)
    names = args.names or ORDER
    unknown = [n for n in names if n not in ORDER]
    if unknown:
        ap.error(f"unknown benchmark(s) {unknown}; choose from {ORDER}")
    for name in names:
        start = time.perf_counter()
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        importlib.import_module(f"bench.{name}").run(quick=args.quick)
        print(f"[bench] {name} done in {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)
    assemble(ORDER)
    print("wrote bench/RESULTS.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
