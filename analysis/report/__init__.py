"""The HTML report and terminal summary built from the table `collect` wrote; build.write_report is the one entry."""
