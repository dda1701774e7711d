"""The studies' published measurements (studies.toml) as one flat table of figures, each with its study, section, URL
and date, and the papers' ImageNet training schedules (imagenet.toml). Seed 000 prints train hours, not a rate: its
tweets/s is derived here (tweets seen / train hours), and each derived row says so and how."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).with_name("studies.toml")


@lru_cache(maxsize=1)
def _data() -> dict:
    return tomllib.loads(DATA.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def imagenet_schedules() -> dict[str, dict]:
    """benchmark name -> {batch_size, iterations, samples, paper, source}."""
    data = tomllib.loads(DATA.with_name("imagenet.toml").read_text(encoding="utf-8"))
    return {name: {**row, "samples": row["batch_size"] * row["iterations"]} for name, row in data["model"].items()}


@dataclass(frozen=True)
class Figure:
    """One published throughput, with where it comes from."""

    study: str  # "seed000"
    benchmark: str  # payload benchmark name
    label: str  # "AWS p2.xlarge, 1 x Tesla K80"
    gpu: str
    gpu_count: int
    gpus_used: int
    precision: str
    value: float  # throughput in `unit`
    unit: str
    basis: str  # "measured" | "derived: ..." | "estimated by the study ..."
    source: str  # "seed 000, Table 1: Summary ... (url)"
    published: str
    date_note: str
    batch_size: int | None = None  # per GPU; None when the study does not say
    train_hours: float | None = None
    cost_usd: float | None = None
    workload_samples: int | None = None  # samples the study's run saw (derived rows), for extrapolations
    input: str = ""  # what the study fed the model ("real tweets padded to the longest tweet ...")
    synthetic_input: str = ""  # how a synthetic payload run's input differs from it ("" when the same shape)

    @property
    def gpus(self) -> str:
        """The GPUs as a sentence names them ("K80", "4 x GTX 1080 Ti")."""
        return (f"{self.gpus_used} x " if self.gpus_used > 1 else "") + self.gpu.removeprefix("Tesla ")


SEED004_MODELS = ("inception3", "resnet50", "vgg16")
# A payload precision and the study precision it does the same arithmetic as.
SAME_PRECISION = {"fp32": "fp32", "mixed": "fp16"}


def _given(value) -> bool:
    return value is not None and value == value and value != ""  # not None, NaN or empty


def work_differences(f: Figure, precision, batch, data) -> list[str]:
    """How a run (its precision, per-GPU batch and data) does other work than the study's figure `f`, in words."""
    out = []
    if _given(precision) and SAME_PRECISION.get(str(precision), str(precision)) != f.precision:
        out.append(f"{precision} here, {f.precision} in the study")
    if f.batch_size is None:
        out.append("the study does not print its batch size")
    elif _given(batch) and int(batch) != f.batch_size:
        out.append(f"batch {int(batch)} here, {f.batch_size} in the study")
    if str(data) == "synthetic" and f.synthetic_input:
        out.append(f"{f.synthetic_input} here, {f.input} in the study")
    return out


# The payload's name for a study's precision (the reverse of SAME_PRECISION).
PAYLOAD_PRECISION = {study: payload for payload, study in SAME_PRECISION.items()}
# Study precisions a CPU cannot run as the study ran them, and why: a probe of them here would be
# other work under the study's label, so the demo compares nothing for them on a CPU.
GPU_ONLY_PRECISIONS = {
    "fp16": "the study trained in fp16 on its GPUs' half-precision units, which a CPU does not have "
    "(it would emulate float16: other arithmetic, not the study's work)",
}


@dataclass(frozen=True)
class StudyJob:
    """A study's own configuration as a shipped task file this machine can probe (synthetic data of its shape)."""

    study: str  # "seed 000", as Figure.study
    benchmark: str
    task: str  # the task file, relative to the project (infra.projectfiles.user_or_shipped)
    batch: int  # per GPU
    precision: str  # the study's ("fp32", "fp16")

    @property
    def payload_precision(self) -> str:
        return PAYLOAD_PRECISION.get(self.precision, self.precision)

    def cannot_run(self, gpus: int) -> str | None:
        """Why this machine (with `gpus` GPUs) cannot run the study's configuration, or None."""
        return GPU_ONLY_PRECISIONS.get(self.precision) if not gpus else None


@lru_cache(maxsize=1)
def study_jobs() -> tuple[StudyJob, ...]:
    """Each study's configuration the demo probes (studies.toml [[probe]]), in file order."""
    data = _data()
    return tuple(
        StudyJob(
            study=row["study"].replace("seed", "seed ", 1),  # as Figure.study names it
            benchmark=row["benchmark"],
            task=row["task"],
            batch=int(row["batch"]),
            precision=data["workload"][row["study"]]["precision"],
        )
        for row in data["probe"]
    )


def _study(data: dict, key: str) -> dict:
    """The fields every figure of one study shares: its name, source, dates and workload."""
    meta, work = data["study"][key], data["workload"][key]
    return {
        "study": key.replace("seed", "seed ", 1),
        "precision": work["precision"],
        "unit": work["unit"],
        "source": f"{meta['title']} ({meta['author']}), {meta['section']}, {meta['url']}",
        "published": meta["published"],
        "date_note": meta["date_note"],
        "input": work["input"],
        "synthetic_input": work["synthetic_input"],
    }


def _seed000(data: dict) -> list[Figure]:
    work = data["workload"]["seed000"]
    tweets = int(work["dataset_tweets"] * work["train_fraction"]) * work["epochs"]
    basis = (
        f"derived: {work['epochs']} epochs x {int(work['dataset_tweets'] * work['train_fraction']):,} training "
        f"tweets ({work['train_fraction']:.0%} of {work['dataset_tweets']:,}) / printed train hours"
    )
    out = []
    for row in data["seed000"]:
        label = f"{row['provider']} {row['instance']}"
        if row["gpu"] not in row["instance"]:
            label += f" ({row['gpu_count']} x {row['gpu']})"
        if row["gpus_used"] != row["gpu_count"]:
            label += f" ({row['gpus_used']} GPU used)"
        out.append(
            Figure(
                **_study(data, "seed000"),
                benchmark=work["benchmark"],
                label=label,
                gpu=row["gpu"],
                gpu_count=row["gpu_count"],
                gpus_used=row["gpus_used"],
                value=round(tweets / (row["train_hours"] * 3600), 1),
                basis=basis,
                train_hours=row["train_hours"],
                cost_usd=row["cost_usd"],
                workload_samples=tweets,
            )
        )
    return out


def _seed004(data: dict) -> list[Figure]:
    precision = data["workload"]["seed004"]["precision"]
    return [
        Figure(
            **_study(data, "seed004"),
            benchmark=model,
            label=f"{row['gpu_count']} x {row['gpu']} (batch {batch}, {precision})",
            gpu=row["gpu"],
            gpu_count=row["gpu_count"],
            gpus_used=row["gpu_count"],
            batch_size=int(batch),
            value=float(value),
            basis=row["basis"],
        )
        for row in data["seed004"]
        for model in SEED004_MODELS
        for batch, value in sorted(row[model].items(), key=lambda kv: int(kv[0]))
    ]


@lru_cache(maxsize=1)
def reference_figures() -> tuple[Figure, ...]:
    """Every published throughput this project ships, seed 000 then seed 004."""
    return tuple(_seed000(_data()) + _seed004(_data()))


def workload_notes() -> dict[str, str]:
    """benchmark -> what the study's figure covers, for the report's caveats."""
    w = _data()["workload"]
    return {w["seed000"]["benchmark"]: w["seed000"]["notes"], **dict.fromkeys(SEED004_MODELS, w["seed004"]["notes"])}
