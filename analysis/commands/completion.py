"""`completion`: print the shell code that completes gpubench's commands, options and stack names.

examples:
  eval "$(gpubench completion bash)"                      this shell only
  gpubench completion bash >> ~/.bashrc                   every new bash
  gpubench completion zsh > "${fpath[1]}/_gpubench"       zsh
  gpubench completion fish > ~/.config/fish/completions/gpubench.fish

The same script comes from argcomplete's own `register-python-argcomplete gpubench`.
"""

from __future__ import annotations

from analysis.commands import add_command
from payload import exitcodes

SHELLS = ("bash", "zsh", "fish")


def register(sub) -> None:
    p = add_command(sub, "completion", run, description=__doc__)
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def run(args) -> int:
    try:
        import argcomplete  # heavy: 8 ms, only when asked (and in analysis.cli.complete)
    except ImportError:
        raise exitcodes.GpubenchError(
            "shell completion needs argcomplete: `pip install argcomplete`", exit_code=exitcodes.MISSING
        ) from None

    print(argcomplete.shellcode(["gpubench"], shell=args.shell))
    return exitcodes.OK
