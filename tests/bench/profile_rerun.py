"""Where a cached rerun of a dashboard page spends its time (pyinstrument, in-process AppTest).

    python tests/bench/profile_rerun.py [--page explorer] [--reruns 5] [--html out.html]
        [--interaction rerun|row|budget]

Runs the app once (computing the default audit), switches to ``--page``, then times
``--reruns`` further reruns of the page on cached data, printing the median wall time, the
number of plotly charts and the bytes of chart JSON and table Arrow data each rerun emits,
and the pyinstrument profile of the page body in the last rerun. AppTest skips the browser and the websocket:
this is the server-side share of an interaction. (``pip install pyinstrument``; not a test
dependency.)

``--interaction`` says what each timed run does: ``rerun`` (the page as it is), ``row``
(another sample of the explorer's table each time, as a row click selects it: every sample is
new, so per-sample work such as the flip-set search is included) or ``budget`` (the triage
budget slider one step further each time, every value new). AppTest has no row-selection
event, so the selection is set in the session state as :func:`ui.selection.apply_table_selection`
would; and it always reruns the whole script, where the browser reruns only the fragment
holding the widget: the fragment's share is its node in the profile.
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
    parser.add_argument("--interaction", choices=("rerun", "row", "budget"), default="rerun")
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
            if not profiled["on"] or profiler.is_running:  # a fragment's run_page inside the page's
                return run_page(body, what)
            profiler.start()
            try:
                return run_page(body, what)
            finally:
                profiler.stop()

        ui.components.run_page = profiled_run_page
        ids = [int(v) for v in at.dataframe[0].value["sample_id"]] if args.interaction == "row" else []
        for i in range(args.reruns):
            profiled["on"] = i == args.reruns - 1
            if args.interaction == "row":
                at.session_state["selected_sample"] = ids[(i + 1) % len(ids)]
            elif args.interaction == "budget":
                at.slider(key="triage_budget").set_value(int(at.session_state["triage_budget"]) % 50 + 1)
            start = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - start)
            assert not at.exception, [e.value for e in at.exception]
        charts = at.get("plotly_chart")
        chart_bytes = sum(len(c.proto.spec) for c in charts)
        arrow_bytes = sum(d.proto.ByteSize() for d in at.dataframe)
    print(
        f"page {args.page}, {args.interaction}: cached rerun median {statistics.median(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms over {len(times)} reruns; load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"per rerun: {len(charts)} plotly charts ({chart_bytes / 1024:.0f} KiB JSON), "
        f"tables {arrow_bytes / 1024:.0f} KiB Arrow"
    )
    print(profiler.output_text(unicode=True, color=False, show_all=False))
    if args.html:
        Path(args.html).write_text(profiler.output_html())


if __name__ == "__main__":
    main()
