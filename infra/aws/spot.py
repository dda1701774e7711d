"""EC2 spot price history as the hook `analysis.price.spot` prices spot runs with."""

from __future__ import annotations

from datetime import datetime

from infra.aws.prices import SPOT_HISTORY_DAYS, SPOT_PRODUCT, spot_price_history
from infra.aws.sweep import boto3_session, session_client

DAYS = SPOT_HISTORY_DAYS  # EC2 keeps 90 days of spot price history
client = session_client("ec2")  # an EC2 client on a fresh boto3 session: credentials resolved now


def series(ec2_client, instance_type: str, zone: str, start: datetime, end: datetime) -> tuple[list, str]:
    """(price steps covering [start, end], where they came from)."""
    steps = spot_price_history(ec2_client, instance_type, zone, start, end)
    return steps, f"EC2 describe_spot_price_history ({instance_type}, {zone}, {SPOT_PRODUCT})"


def has_credentials() -> bool:
    return boto3_session().get_credentials() is not None
