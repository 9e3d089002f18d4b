"""Where a cached rerun of a dashboard page spends its time (pyinstrument, in-process AppTest).

    python tests/bench/profile_rerun.py [--page explorer] [--reruns 5] [--html out.html]

Runs the app once (computing the default audit), switches to ``--page``, then times
``--reruns`` further reruns of the page on cached data, printing the median wall time, the
number of plotly charts and the bytes of chart JSON and table Arrow data each rerun emits,
and the pyinstrument profile of the page body in the last rerun. AppTest skips the browser and the websocket:
this is the server-side share of an interaction. (``pip install pyinstrument``; not a test
dependency.)
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--page", default="explorer")
    parser.add_argument("--reruns", type=int, default=5)
    parser.add_argument("--html", default=None, help="also write the profile as HTML here")
    args = parser.parse_args()
    from pyinstrument import Profiler
    from streamlit.testing.v1 import AppTest

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AUDIT_REVIEWS_DB"] = str(Path(tmp) / "reviews.sqlite3")
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.run()
        at.switch_page(f"pages/{args.page}.py").run()
        assert not at.exception, [e.value for e in at.exception]
        times = []
        profiler = Profiler(interval=0.001)
        # AppTest runs the script in its own thread; profile the page body there.
        import ui.components

        run_page = ui.components.run_page
        profiled = {"on": False}

        def profiled_run_page(body, what):
            if not profiled["on"]:
                return run_page(body, what)
            profiler.start()
            try:
                return run_page(body, what)
            finally:
                profiler.stop()

        ui.components.run_page = profiled_run_page
        for i in range(args.reruns):
            profiled["on"] = i == args.reruns - 1
            start = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - start)
        charts = at.get("plotly_chart")
        chart_bytes = sum(len(c.proto.spec) for c in charts)
        arrow_bytes = sum(d.proto.ByteSize() for d in at.dataframe)
    print(f"page {args.page}: cached rerun median {statistics.median(times) * 1000:.0f} ms, "
          f"max {max(times) * 1000:.0f} ms over {len(times)} reruns; load average {os.getloadavg()[0]:.1f}")
    print(f"per rerun: {len(charts)} plotly charts ({chart_bytes / 1024:.0f} KiB JSON), "
          f"tables {arrow_bytes / 1024:.0f} KiB Arrow")
    print(profiler.output_text(unicode=True, color=False, show_all=False))
    if args.html:
        Path(args.html).write_text(profiler.output_html())


if __name__ == "__main__":
    main()
