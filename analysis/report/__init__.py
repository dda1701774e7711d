"""The HTML report and terminal summary built from the table `collect` wrote.

build.write_report is the one entry: query.py aggregates the runs (DataFusion),
metrics.analyse_summary derives the tables, page.py lays them out (html.py's
templates), plots.py and chart_png.py draw the charts. docs/architecture.md
lists every module."""
