"""The task file: a workload spec plus `resources` (GPU alternatives, market, where) and `work` (how much the
whole job trains). Every field error names the file, the field and the fix; resources and work never change
the workload's hash."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from payload.workloads.spec import (
    FIELDS,
    Accelerator,
    Resources,
    TaskFile,
    Work,
    WorkloadSpecError,
    load_spec,
    parse_accelerators,
)

BASE = {"name": "job", "run": "python train.py"}


def write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


# (document, the field named, a piece of the fix)
FIELD_ERRORS = [
    # the job
    ({"run": "x"}, "'name'", "required"),
    ({"name": "a"}, "'run'", "required"),
    ({"name": "a b", "run": "x"}, "'name'", "letters, digits"),
    ({**BASE, "run": ["ok", 3]}, "'run'", "shell commands that train"),
    ({**BASE, "setup": 5}, "'setup'", "shell commands run once"),
    ({**BASE, "description": ["x"]}, "'description'", "expected a string"),
    ({**BASE, "image": "two words"}, "'image'", "not an image reference"),
    ({**BASE, "env": ["A=1"]}, "'env'", "mapping NAME: value"),
    ({**BASE, "env": {"1A": "x"}}, "'env'", "not a variable name"),
    ({**BASE, "env": {"A" * 100_000: "x"}}, "'env'", "at most 128"),
    ({**BASE, "env": {"GPUBENCH_STACK": "s"}}, "'env'", "set by gpubench itself"),
    ({**BASE, "env": {"A": None}}, "'env'", "expected a string or number"),
    ({**BASE, "gpus": -1}, "'gpus'", "integer from 0 to 16"),
    ({**BASE, "gpus": "many"}, "'gpus'", "integer from 0 to 16"),
    ({**BASE, "gpus": 100000}, "'gpus'", "the most GPUs one machine in the catalog has"),
    ({**BASE, "run": "echo x\n" * 20_000}, "'run'", "more than 100,000 (a process argument's limit)"),
    ({**BASE, "env": {"BIG": "x" * 200_000}}, "'env'", "BIG: 200,000 characters, more than 100,000"),
    ({**BASE, "gpus": 1000000000000}, "'gpus'", "the most GPUs one machine in the catalog has"),
    ({**BASE, "metrics": ["csv"]}, "'metrics'", "json, mllog"),
    ({**BASE, "workdir": "nope"}, "'workdir'", "relative to the spec file"),
    ({**BASE, "workdir": 3}, "'workdir'", "a directory path"),
    ({**BASE, "envs": {"A": 1}}, "'envs'", "SkyPilot's `envs` is `env` here"),
    ({**BASE, "num_nodes": 2}, "'num_nodes'", "single-machine"),
    # resources
    ({**BASE, "resources": {}}, "'resources'", "come from the stack's offering"),
    ({**BASE, "resources": "T4"}, "'resources'", "expected a mapping like {accelerators"),
    ({**BASE, "resources": {"accelerators": []}}, "'resources.accelerators'", "at least one GPU alternative"),
    ({**BASE, "resources": {"accelerators": 4}}, "'resources.accelerators'", "a list of GPU alternatives"),
    ({**BASE, "resources": {"accelerators": ["T4:x"]}}, "'resources.accelerators'", "NAME or NAME:COUNT"),
    ({**BASE, "resources": {"accelerators": "T4:0"}}, "'resources.accelerators'", "1 to 16, the most GPUs"),
    ({**BASE, "resources": {"accelerators": ["A100:100000"]}}, "'resources.accelerators'", "1 to 16, the most"),
    ({**BASE, "resources": {"accelerators": {"T4": 10**30}}}, "'resources.accelerators'", "1 to 16, the most"),
    ({**BASE, "resources": {"accelerators": [{"T4": 1}]}}, "'resources.accelerators'", "NAME or NAME:COUNT"),
    ({**BASE, "resources": {"use_spot": True}}, "'resources.use_spot'", "`use_spot` is `spot` here"),
    ({**BASE, "resources": {"cloud": "aws"}}, "'resources.cloud'", "providers: [aws]"),
    ({**BASE, "resources": {"disk_size": 100}}, "'resources.disk_size'", "use `disk_gb`"),
    ({**BASE, "resources": {"accelerators": "T4", "spot": "sometimes"}}, "'resources.spot'", "true or false"),
    ({**BASE, "resources": {"accelerators": "T4", "providers": ["AWS"]}}, "'resources.providers'", "lowercase"),
    ({**BASE, "resources": {"accelerators": "T4", "providers": []}}, "'resources.providers'", "e.g. [aws, gcp]"),
    ({**BASE, "resources": {"accelerators": "T4", "regions": [""]}}, "'resources.regions'", "region names"),
    ({**BASE, "resources": {"accelerators": "T4", "disk_gb": 0}}, "'resources.disk_gb'", "integer from 1 to"),
    ({**BASE, "resources": {"accelerators": "T4", "disk_gb": 10.5}}, "'resources.disk_gb'", "integer from 1 to"),
    ({**BASE, "resources": {"accelerators": "T4", "disk_gb": 10**9}}, "'resources.disk_gb'", "to 65536"),
    ({**BASE, "gpus": 4, "resources": {"accelerators": ["T4", "A100:8"]}}, "'gpus'", "drop those alternatives"),
    # work
    ({**BASE, "work": 1000}, "'work'", "expected a mapping"),
    ({**BASE, "work": {}}, "'work'", "exactly one of samples"),
    ({**BASE, "work": {"samples": 10, "epochs": 2, "samples_per_epoch": 5}}, "'work'", "exactly one of"),
    ({**BASE, "work": {"samples_per_step": 100}}, "'work.steps'", "total optimizer steps"),
    ({**BASE, "work": {"samples_per_epoch": 100}}, "'work.epochs'", "required with `samples_per_epoch`"),
    ({**BASE, "work": {"samples": -5}}, "'work.samples'", "a number > 0"),
    ({**BASE, "work": {"samples": True}}, "'work.samples'", "a number > 0"),
    ({**BASE, "work": {"steps": 10, "samples_per_step": "lots"}}, "'work.samples_per_step'", "a number > 0"),
    ({**BASE, "work": {"batch_size": 64}}, "'work.batch_size'", "give `samples_per_step`"),
    ({**BASE, "work": {"samples": 1.7e308}}, "'work'", "more than 1e+15 (no real job trains that many)"),
    ({**BASE, "work": {"steps": 1e10, "samples_per_step": 1e10}}, "'work'", "1e+20 samples in all, more than"),
    ({**BASE, "work": {"epochs": 1e300}}, "'work'", "1e+300 epochs, more than 1e+15"),
    # progress
    ({**BASE, "progress": {"pattern": "(?P<step>\\d+"}}, "'progress.pattern'", "not a regular expression"),
    ({**BASE, "progress": {"pattern": "(\\d+)/(\\d+)"}}, "'progress.pattern'", "no named group `step`"),
    (
        {**BASE, "progress": {"pattern": "(?P<step>\\d+) (?P<lr>\\S+)"}},
        "'progress.pattern'",
        "unknown named group 'lr'",
    ),
    ({**BASE, "progress": {"regex": "x"}}, "'progress.regex'", "use `pattern`"),
    ({**BASE, "progress": {"pattern": "(?P<step>\\d+)", "samples_per_step": 0}}, "'progress.samples_per_step'", "> 0"),
    ({**BASE, "metrics": ["pattern"]}, "'metrics'", "needs `progress.pattern`"),
    ({**BASE, "metrics": ["json"], "progress": {"pattern": "(?P<step>\\d+)"}}, "'progress'", "does not list `pattern`"),
]


@pytest.mark.parametrize("doc, field, fix", FIELD_ERRORS, ids=[f"{i}:{f}" for i, (_, f, _) in enumerate(FIELD_ERRORS)])
def test_every_field_error_names_the_file_the_field_and_the_fix(tmp_path, doc, field, fix):
    path = write(tmp_path, doc)
    with pytest.raises(WorkloadSpecError) as exc:
        load_spec(path)
    message = str(exc.value)
    assert message.startswith(f"{path}: field {field}: "), message
    assert fix in message


def test_not_a_mapping_and_pydantics_own_checks_still_read_as_field_errors(tmp_path):
    path = tmp_path / "task.yaml"
    path.write_text("- name: a\n")
    with pytest.raises(WorkloadSpecError, match="expected a mapping with at least `name` and `run`, got list"):
        load_spec(path)
    with pytest.raises(ValueError):  # the models check alone too
        Accelerator(name="T4", count=0)


def test_resources_accept_a_list_one_string_or_a_mapping_and_count_defaults_to_one(tmp_path):
    forms = {
        "list": ["T4", "L4:1", "A100:8"],
        "string": "T4, L4:1, A100:8",
        "mapping": {"T4": 1, "L4": 1, "A100": 8},
    }
    for form in forms.values():
        spec = load_spec(write(tmp_path, {**BASE, "resources": {"accelerators": form}}))
        assert [str(a) for a in spec.resources.accelerators] == ["T4:1", "L4:1", "A100:8"]
        assert spec.resources.spot is False and spec.resources.providers is None and spec.resources.disk_gb is None
    one = load_spec(write(tmp_path, {**BASE, "resources": {"accelerators": "V100:2", "spot": True}}))
    assert one.resources.accelerators == (Accelerator(name="V100", count=2),) and one.resources.spot
    assert parse_accelerators("T4,T4:1") == (Accelerator(name="T4", count=1),)  # the same alternative once
    full = load_spec(
        write(
            tmp_path,
            {
                **BASE,
                "resources": {"accelerators": ["T4"], "providers": "gcp", "regions": ["us-central1"], "disk_gb": 80},
            },
        )
    )
    assert full.resources == Resources(
        accelerators=(Accelerator(name="T4"),), providers=("gcp",), regions=("us-central1",), disk_gb=80
    )


@pytest.mark.parametrize(
    "work, total",
    [
        ({"samples": 1281167}, 1281167.0),
        ({"steps": 10000, "samples_per_step": 256}, 10000 * 256.0),
        ({"epochs": 90, "samples_per_epoch": 1281167}, 90 * 1281167.0),
        ({"epochs": 0.5, "samples_per_epoch": 50000}, 25000.0),
        ({"epochs": 60}, None),  # the job's output fills in the rest (conventions.whole_job)
        ({"steps": 10000}, None),
    ],
)
def test_work_total_samples(tmp_path, work, total):
    spec = load_spec(write(tmp_path, {**BASE, "work": work}))
    assert isinstance(spec.work, Work) and spec.work.total_samples() == total


def test_resources_and_work_leave_the_hash_alone(tmp_path):
    plain = load_spec(write(tmp_path, BASE))
    sized = load_spec(
        write(tmp_path, {**BASE, "resources": {"accelerators": ["T4", "H100:8"], "spot": True}, "work": {"samples": 9}})
    )
    assert sized.sha256 == plain.sha256 and sized.benchmark_name == plain.benchmark_name
    assert "resources" not in sized.normalised() and "work" not in sized.normalised()
    edited = load_spec(write(tmp_path, {**BASE, "run": "python train.py --fast"}))
    assert edited.sha256 != plain.sha256  # the job itself still counts


def test_every_user_field_has_a_description():
    assert list(FIELDS) == list(TaskFile.model_fields)
    assert {"resources", "work"} <= set(FIELDS)
    for model in (TaskFile, Resources, Work, Accelerator):
        for name, info in model.model_fields.items():
            assert info.description and len(info.description) > 10, (model.__name__, name)


def test_the_gpu_count_bound_is_the_catalogs_largest_machine():
    from infra.catalog import load_catalog
    from payload.workloads.spec import MAX_GPUS_PER_MACHINE

    assert MAX_GPUS_PER_MACHINE == max(o.gpu_count for o in load_catalog().offerings())
