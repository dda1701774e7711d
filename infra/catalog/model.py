"""Typed catalog records: plain dataclasses (no Pulumi, no TensorFlow)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from infra import clouds

# CUDA 13 drops Maxwell, Pascal and Volta; CUDA 12 drops Kepler (K80). Each
# payload image generation is the newest stack that still supports the GPU.
# (lower bound of compute capability inclusive, generation name), newest first.
IMAGE_GENERATIONS: tuple[tuple[float, str], ...] = (
    (7.5, "cuda13"),
    (5.0, "cuda12"),
    (0.0, "cuda11-legacy"),
)

MARKETS = ("on-demand", "spot")


# The datasheet figures a performance model uses: field -> unit. Dense (no
# sparsity), per GPU; None where no source gives one (data/gpus.toml says why).
GPU_FIGURES = {
    "fp32_tflops": "TFLOPS",
    "tf32_tflops": "TFLOPS",
    "fp16_tensor_tflops": "TFLOPS",
    "memory_bandwidth_gbs": "GB/s",
}


@dataclass(frozen=True)
class GpuSpec:
    model: str
    memory_gb: float
    compute_capability: str
    architecture: str
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    fp16_tensor_tflops: float | None = None  # FP16/BF16 tensor cores (FP16 only before Ampere)
    memory_bandwidth_gbs: float | None = None
    spec_source: str = ""
    spec_note: str = ""

    @property
    def image_generation(self) -> str:
        cc = float(self.compute_capability)
        return next(name for floor, name in IMAGE_GENERATIONS if cc >= floor)


@dataclass(frozen=True)
class BillingTerms:
    """One period of a billing rule (see data/billing.toml for the kinds)."""

    rule: str
    since: date
    kind: str  # metered | monthly | amortised
    source: str
    increment_seconds: float = 1.0
    minimum_seconds: float = 0.0
    monthly_fee_usd: float = 0.0
    hours_per_month: float = 730.0

    def describe(self) -> str:
        if self.kind == "monthly":
            return f"monthly, prorated at {self.hours_per_month:g} h/month"
        if self.kind == "amortised":
            return "amortised purchase + electricity"
        text = f"per {_describe_seconds(self.increment_seconds, article=False)}"
        if self.minimum_seconds:
            text += f", {_describe_seconds(self.minimum_seconds)} minimum"
        if self.monthly_fee_usd:
            text += f", plus ${self.monthly_fee_usd:g}/month fee"
        return text


def _describe_seconds(seconds: float, article: bool = True) -> str:
    """'1 minute', '10 minutes' ('minute' without the count when article=False)."""
    for size, unit in ((3600, "hour"), (60, "minute"), (1, "second"), (0.001, "millisecond")):
        if seconds >= size and abs(seconds / size - round(seconds / size)) < 1e-9:
            n = round(seconds / size)
            if n == 1:
                return f"1 {unit}" if article else unit
            return f"{n} {unit}s"
    return f"{seconds:g} s"


@dataclass(frozen=True)
class Interconnect:
    """How the GPUs of a multi-GPU offering talk to each other, as the provider states it."""

    kind: str  # "NVLink" | "PCIe"
    bandwidth_gbs: float | None  # per GPU, as the source states it (None: not stated)
    source: str
    generation: str = ""  # "4" for NVLink 4; PCIe generation

    def describe(self) -> str:
        text = f"{self.kind} {self.generation}".strip()
        return text + (f", {self.bandwidth_gbs:g} GB/s per GPU" if self.bandwidth_gbs else "")


INTERCONNECT_KINDS = ("NVLink", "PCIe")


@dataclass(frozen=True)
class OnPremSpec:
    purchase_usd: float
    lifetime_months: float
    power_kw: float
    electricity_usd_per_kwh: float
    days_per_month: float
    as_of: date | None = None


@dataclass(frozen=True)
class Offering:
    id: str
    provider: str
    kind: str
    instance_type: str
    gpu: GpuSpec | None
    gpu_count: int
    vcpus: int | None
    memory_gb: float | None
    regions: tuple[str, ...]
    billing: str
    markets: tuple[str, ...]
    specs_source: str
    zones: tuple[str, ...] = ()
    accelerator_type: str | None = None
    accelerator_count: int = 0
    retired: date | None = None
    retired_source: str | None = None
    onprem: OnPremSpec | None = None
    stack_suffix: str | None = None
    price_components: tuple[str, ...] = field(default=())
    interconnect: Interconnect | None = None
    unpriced: str | None = None  # why no source gives a price (listed, never ranked)

    @property
    def is_cloud(self) -> bool:
        """True for offerings Pulumi can launch (a cloud with a folder under infra/)."""
        return clouds.is_cloud(self.provider)

    @property
    def gpu_model(self) -> str | None:
        return self.gpu.model if self.gpu else None

    @property
    def image_generation(self) -> str:
        return self.gpu.image_generation if self.gpu else "cuda13"

    def stack_name(self, market: str = "on-demand") -> str:
        """`<provider>-<family>-<size>[-spot]`, e.g. aws-p3-8x (no Pulumi stack: the id, for runs/<name>/)."""
        if market not in self.markets:
            raise ValueError(f"{self.id} is not sold on the {market!r} market (markets: {', '.join(self.markets)})")
        base = clouds.get(self.provider).stack_base(self) if self.is_cloud else self.id.replace("/", "-")
        suffix = f"-{self.stack_suffix}" if self.stack_suffix else ""
        return base + suffix + ("-spot" if market == "spot" else "")

    def stack_names(self) -> list[str]:
        return [self.stack_name(m) for m in self.markets]

    def is_retired_on(self, day: date) -> bool:
        return self.retired is not None and day >= self.retired


@dataclass(frozen=True)
class PriceQuote:
    """An hourly price with where it came from (`components`: a GCP composition's parts); a snapshot's row
    is one whose `offering_id` is its price key."""

    offering_id: str
    market: str
    hourly_usd: float
    as_of: date
    source: str
    snapshot: str
    components: tuple[PriceComponent, ...] = ()
    setup_fee_usd: float = 0.0
    monthly_usd: float | None = None
    note: str | None = None

    @property
    def key(self) -> str:
        """A snapshot row's price key: "aws/p3.8xlarge", "machine:n1-standard-8", "gpu:V100"."""
        return self.offering_id


@dataclass(frozen=True)
class PriceComponent:
    name: str  # "machine:n1-standard-8" or "gpu:V100 x1"
    hourly_usd: float
    quantity: int
    as_of: date
    source: str
    snapshot: str

    @property
    def total_usd(self) -> float:
        return self.hourly_usd * self.quantity
