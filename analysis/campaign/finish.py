"""The end of a campaign: collect, tear down, report, summarise. Stacks with final results are torn down as
completed (every result checked again), the others by name (no result will come; a failed `up` may have
left a security group behind), each destroy's end recorded since waste counts to it. The summary goes
beside the report, into the bucket and, as a section, into the report's index.html."""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from analysis.campaign.manifest import SUMMARY_KEY, Manifest
from analysis.teardown import teardown
from payload import exitcodes
from payload.terminal import terminal_text
from payload.timestamps import iso

WITH_FINAL_RESULTS = ("finished", "failed")
NO_RESULT_COMING = ("interrupted", "expired", "launch-failed")
SECTION_ID = "campaign-waste"


def collect_campaign(urls: list[str], out_dir: Path, run_ids: set[str], all_runs: bool) -> dict[str, Any]:
    from analysis.collect import collect, write_table  # heavy: pyarrow (the campaign command loads this module)

    summary, rows = collect(urls, out_dir)
    kept = rows if all_runs else [r for r in rows if r["run_id"] in run_ids]
    if not all_runs:
        write_table(kept, out_dir)
    return {**summary.to_dict(), "campaign_runs": len(kept)}


def teardown_stacks(
    manifest: Manifest, statuses: Sequence[Any], backend_factory: Any, work_dir: Path, results_urls: list[str], printer
) -> tuple[list[dict[str, Any]], str | None]:
    """Destroy every terminal stack and record it in the manifest; (outcomes, error that stopped teardown)."""
    try:
        backend = backend_factory(work_dir)
    except Exception as exc:  # noqa: BLE001 - PulumiMissing: report and summary still get written
        return [], f"teardown not possible: {exc}"
    final = [s.stack for s in statuses if s.state in WITH_FINAL_RESULTS]
    other = [s.stack for s in statuses if s.state in NO_RESULT_COMING]
    outcomes: list[Any] = []
    error = None
    try:
        for names, completed in ((final, True), (other, False)):  # the first checked again, the others by name
            if names:
                how = dict(work_dir=work_dir, workspace_factory=lambda _work_dir: backend, printer=printer)
                outcomes += teardown(names, completed=completed, results_urls=results_urls, **how)
    except Exception as exc:  # noqa: BLE001 - PulumiMissing and friends carry their advice
        error = f"teardown stopped: {exc}"
    for o in outcomes:
        if o.stack in manifest.stacks:
            record = {"action": o.action, "reason": o.reason, "error": o.error, "at": o.ended_at or iso()}
            manifest.update(o.stack, save=False, teardown=record)
    manifest.save()
    return [o.to_dict() for o in outcomes], error


def write_report(out_dir: Path, table: Path | None = None, echo: Callable[[str], None] = print) -> int:
    """The report of the runs collected at `table` (default: out_dir), its summary echoed as `gpubench report`
    prints it (a campaign's end and the demo's); its exit code."""
    from analysis.report.build import write_report as report  # heavy: pandas, DuckDB, matplotlib

    try:
        outcome = report(out_dir, table=table)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    if outcome.price_warning:
        print(f"warning: {outcome.price_warning}", file=sys.stderr)
    echo(outcome.text().rstrip("\n"))
    return exitcodes.OK


def summary_doc(manifest: Manifest, statuses: Sequence[Any], extra: dict[str, Any]) -> dict[str, Any]:
    rows = [s.to_dict() for s in statuses]
    places = {"cost_usd": 6, "waste_seconds": 3, "waste_usd": 6}
    totals = {k: round(sum(r[k] for r in rows if r[k] is not None), n) for k, n in places.items()}
    doc = {"campaign_id": manifest.campaign_id, "results": manifest.data.get("results"), "written_at": iso()}
    return {**doc, "stacks": rows, "totals": totals, **extra}


def money_text(v: Any) -> str:
    return "-" if v is None else f"${v:.4f}"


def seconds_text(v: Any) -> str:
    return "-" if v is None else f"{v:.0f} s"


def stack_table(rows: Sequence[dict[str, Any]], waste_usd: bool = False) -> list[str]:
    """The stacks' lines (StackStatus.to_dict rows): `campaign status`, and with waste in USD the summary."""
    usd = f" {'waste $':>10}" if waste_usd else ""
    lines = [f"{'stack':28} {'state':13} {'cost so far':>11} {'waste':>9}{usd}  detail"]
    for r in rows:
        name, detail = terminal_text(r["stack"], multiline=False), terminal_text(r["detail"], multiline=False)
        usd = f" {money_text(r['waste_usd']):>10}" if waste_usd else ""
        cost, waste = money_text(r["cost_usd"]), seconds_text(r["waste_seconds"])
        lines.append(f"{name:28} {r['state']:13} {cost:>11} {waste:>9}{usd}  {detail}")
    return lines


def summary_text(doc: dict[str, Any]) -> str:
    lines = [f"campaign {doc['campaign_id']} ({doc.get('results')})", *stack_table(doc["stacks"], waste_usd=True)]
    t = doc["totals"]
    lines.append(
        f"total: cost {money_text(t['cost_usd'])}, waste {seconds_text(t['waste_seconds'])} ({money_text(t['waste_usd'])}) "
        "billed after results were uploaded"
    )
    return "\n".join(lines) + "\n"


def waste_section(doc: dict[str, Any]) -> str:
    cells = "".join(
        f"<tr><td>{html.escape(r['stack'])}</td><td>{html.escape(r['state'])}</td><td>{money_text(r['cost_usd'])}</td>"
        f"<td>{seconds_text(r['waste_seconds'])}</td><td>{money_text(r['waste_usd'])}</td>"
        f"<td>{html.escape(r.get('waste_basis') or '-')}</td></tr>"
        for r in doc["stacks"]
    )
    t = doc["totals"]
    return (
        f'<section id="{SECTION_ID}"><h2>Campaign {html.escape(doc["campaign_id"])}: waste</h2>'
        "<p>Waste is the time each stack was billed after its last result was uploaded (until it was destroyed, "
        "or until its deadline). AWS instances power off after the upload, so their figure is an upper bound.</p>"
        "<table><tr><th>stack</th><th>state</th><th>cost so far</th><th>waste</th><th>waste USD</th><th>counted</th></tr>"
        f"{cells}</table><p>Total waste: {seconds_text(t['waste_seconds'])} ({money_text(t['waste_usd'])}).</p></section>\n"
    )


def add_to_report(index: Path, doc: dict[str, Any]) -> bool:
    """Append (or replace) the waste section in the report's index.html."""
    if not index.exists():
        return False
    text = index.read_text(encoding="utf-8")
    start = text.find(f'<section id="{SECTION_ID}">')
    if start >= 0:
        end = text.find("</section>", start) + len("</section>\n")
        text = text[:start] + text[end:]
    section = waste_section(doc)
    pos = text.rfind("</body>")
    text = text[:pos] + section + text[pos:] if pos >= 0 else text + section
    tmp = index.with_name(f".{index.name}.campaign.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(index)
    return True


def write_summary(manifest: Manifest, out_dir: Path, doc: dict[str, Any]) -> dict[str, str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, text_path = out_dir / "campaign.json", out_dir / "campaign.txt"
    json_path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    text_path.write_text(summary_text(doc), encoding="utf-8")
    key = SUMMARY_KEY.format(id=manifest.campaign_id)
    manifest.store.put_bytes(key, json.dumps(doc, indent=2).encode(), "application/json")
    paths = {"json": str(json_path), "text": str(text_path), "bucket": manifest.store.url_for(key)}
    if add_to_report(out_dir / "index.html", doc):
        paths["report"] = str(out_dir / "index.html")
    return paths
