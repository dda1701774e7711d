"""Where a benchmark stack writes: `gpubench:results` as a bucket URL, or `stack:<name>` (default
`stack:<provider>-results`): that results stack's outputs `bucketName` and `resultsUrl`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from infra.config import STACK_REF
from payload.layout import ROOT, journal_prefix, stack_prefix
from payload.results_location import BUCKET_SCHEMES, parse_results_location


@dataclass(frozen=True)
class ResultsLocation:
    bucket: pulumi.Output  # bucket name
    prefix: str  # key prefix under the bucket ("" or "team/"), always ending in "/" when set
    url: pulumi.Output  # store root URL handed to the payload (GPUBENCH_RESULTS)

    @property
    def code_prefix(self) -> str:
        """Where code bundles live, shared by the stacks of this results location (read-only for them)."""
        return f"{self.prefix}code/"

    def run_prefix(self, stack: str) -> str:
        """Where this stack's runs live: `[prefix]runs/<stack>/` (its journal: journal_prefix_beside)."""
        return self.prefix + stack_prefix(stack)


def journal_prefix_beside(run_prefix: str) -> str:
    """`[prefix]journal/<stack>/` (where runs are announced) for a stack's `[prefix]runs/<stack>/`."""
    parts = run_prefix.split("/")
    if len(parts) >= 3:
        *root, runs, stack, end = parts
        root_prefix = "".join(f"{part}/" for part in root)
        if f"{runs}/" == ROOT and not end and stack and root_prefix + stack_prefix(stack) == run_prefix:
            return root_prefix + journal_prefix(stack)
    raise ValueError(f"{run_prefix!r} is not a stack's run prefix: expected [prefix]runs/<stack>/")


def locate(ref: str, parent: pulumi.Resource) -> ResultsLocation:
    """Where the stack writes: a results stack's outputs, or the (checked) bucket URL split."""
    if ref.startswith(STACK_REF):
        name = ref[len(STACK_REF) :]  # a short name is a stack of this project: <org>/<project>/<name>
        sref = pulumi.StackReference(
            "results-stack",
            stack_name=name if "/" in name else f"{pulumi.get_organization()}/{pulumi.get_project()}/{name}",
            opts=pulumi.ResourceOptions(parent=parent),
        )
        return ResultsLocation(sref.require_output("bucketName"), "", sref.require_output("resultsUrl"))
    loc = parse_results_location(ref, schemes=BUCKET_SCHEMES)
    return ResultsLocation(
        bucket=pulumi.Output.from_input(loc.bucket), prefix=loc.prefix, url=pulumi.Output.from_input(ref)
    )
