"""Every YAML file a user writes is read by one bounded reader (payload.yamlfile): an alias bomb, a
self-reference, deep nesting or a huge file is refused in milliseconds with a short message, and the
task file, stack file and schedule readers all go through it."""

from __future__ import annotations

import time

import pytest

from payload.yamlfile import MAX_NODES, YamlFileError, load_yaml, quote


def bomb(levels: int, under: str = "env") -> str:
    """A task file whose `under:` mapping holds the classic alias bomb: each level lists the one below 9 times."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return f"name: bomb\nrun: python train.py\n{under}:\n" + "".join(f"  {line}\n" for line in lines)


def test_an_alias_bomb_is_refused_before_anything_expands_it():
    started = time.monotonic()
    with pytest.raises(YamlFileError) as exc:
        load_yaml(bomb(9), "task.yaml")
    assert time.monotonic() - started < 1.0
    assert f"expands to more than {MAX_NODES:,} values" in str(exc.value) and len(str(exc.value)) < 300


@pytest.mark.parametrize(
    "text, says",
    [
        ("a: &a [*a]", "refers to itself"),
        ("[" * 50_000, "nested too deeply"),
        ("a: " + "9" * 5000, "a value cannot be read"),
        ("a: b: c", ":1: not valid YAML (mapping values are not allowed"),
        ("x" * 1_000_001, "more than 1,000,000"),
        ("name: t\x00\x1b\nrun: x", "not valid YAML (unacceptable character #x0000"),
    ],
)
def test_hostile_or_broken_yaml_is_named_in_a_short_message(text, says):
    with pytest.raises(YamlFileError) as exc:
        load_yaml(text, "f.yaml")
    assert says in str(exc.value) and str(exc.value).startswith("f.yaml") and len(str(exc.value)) < 400


def test_anchors_within_the_bound_still_read():
    assert load_yaml("base: &b {A: 1}\nother: *b", "f.yaml") == {"base": {"A": 1}, "other": {"A": 1}}


def test_quote_never_walks_a_whole_structure():
    shared = ["x" * 10]
    for _ in range(30):  # 2**30 leaves if expanded
        shared = [shared, shared]
    assert len(quote(shared)) <= 80 and len(quote("y" * 10_000)) <= 80


def test_a_task_file_bomb_the_error_quotes_a_short_prefix(tmp_path):
    from payload.workloads.spec import WorkloadSpecError, load_spec

    for levels in (5, 9):  # 5 loads (59,049 values) and is refused by the spec; 9 never expands
        path = tmp_path / f"task{levels}.yaml"
        path.write_text(bomb(levels))
        started = time.monotonic()
        with pytest.raises(WorkloadSpecError) as exc:
            load_spec(path)
        assert time.monotonic() - started < 2.0
        assert str(path) in str(exc.value) and len(str(exc.value)) < 500, len(str(exc.value))


def test_stack_files_and_schedules_use_the_same_reader(tmp_path):
    from analysis.campaign.schedule import ScheduleError
    from analysis.campaign.schedule import load as load_schedule
    from infra.stacks import StackFileError, load_config

    (tmp_path / "Pulumi.aws-x.yaml").write_text(bomb(9, under="config"))
    with pytest.raises(StackFileError, match="expands to more than"):
        load_config("aws-x", tmp_path)
    schedule = tmp_path / "weekly.yaml"
    schedule.write_text(bomb(9, under="stacks"))
    with pytest.raises(ScheduleError, match="expands to more than"):
        load_schedule(schedule)


def test_a_key_given_twice_is_refused_naming_it_and_its_line():
    """PyYAML keeps the last of two equal keys without a word: a task's second `run:` would silently win."""
    with pytest.raises(YamlFileError, match=r"task.yaml:3: not valid YAML \(the key 'run' is given twice; keep one\)"):
        load_yaml("name: a\nrun: python train.py\nrun: python other.py\n", "task.yaml")
    with pytest.raises(YamlFileError, match="the key 'EPOCHS' is given twice"):
        load_yaml("env:\n  EPOCHS: '3'\n  EPOCHS: '4'\n", "task.yaml")  # in a nested mapping too
    # a merge key is not a repeat: `<<` brings an anchor's keys in, and a key of its own still overrides them
    assert load_yaml("a: &x {k: 1}\nb:\n  <<: *x\n  k: 2\n", "m.yaml") == {"a": {"k": 1}, "b": {"k": 2}}
