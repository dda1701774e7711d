"""The documented example paths work from any directory: a path the user gave is taken from the
current directory first, and `examples/...` falls back to the copy the install ships."""

from __future__ import annotations

from infra.projectfiles import project_root, user_or_shipped


def test_a_shipped_example_is_found_from_another_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = user_or_shipped("examples/keras-mnist/workload.yaml")
    assert found == project_root() / "examples/keras-mnist/workload.yaml" and found.is_file()


def test_the_users_own_file_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "examples/keras-mnist/workload.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("name: mine\n")
    assert user_or_shipped("examples/keras-mnist/workload.yaml").resolve() == mine.resolve()


def test_other_missing_paths_stay_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert str(user_or_shipped("my-task.yaml")) == "my-task.yaml"
    assert str(user_or_shipped("examples/no-such/workload.yaml")) == "examples/no-such/workload.yaml"


def test_bench_loads_a_shipped_example_from_another_directory(tmp_path, monkeypatch):
    from analysis.bench.run import load_task

    monkeypatch.chdir(tmp_path)
    assert load_task("examples/keras-mnist/workload.yaml").name == "keras-mnist"
