"""The operations' table (operations/): each declaration agrees with its Brain call and with
the records it mirrors, names only models that exist, and loads with the standard library
alone, as the command line's fast path needs."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections import Counter

import pytest
from pydantic import BaseModel

from nexusbrain.api import responses
from nexusbrain.operations import BY_NAME, GROUPS, OPERATIONS
from nexusbrain.operations.args import Arg, Face, Group, Kind, Option, members
from nexusbrain.operations.models import body_model, tool_model
from nexusbrain.operations.retrieval import KINDS, MODES
from nexusbrain.operations.spec import Operation
from nexusbrain.records import DocumentKind, SearchMode


def test_the_light_copies_of_closed_sets_are_the_records_values() -> None:
    assert tuple(m.value for m in SearchMode) == MODES
    assert tuple(k.value for k in DocumentKind) == KINDS


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_a_call_takes_exactly_its_declared_arguments(operation: Operation) -> None:
    """Keyword-only, no defaults (the declaration holds them), named as declared."""
    brain, *params = inspect.signature(operation.call).parameters.values()
    assert brain.name == "brain"
    assert [p.name for p in params] == [arg.name for arg in operation.call_args()]
    assert all(p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in params)


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_an_interface_s_own_arguments_are_offered_there(operation: Operation) -> None:
    """An argument only the command line has is a command-line option or argument; one only
    MCP has is read by the tool's adapter; an interface with its own arguments has an adapter
    or a printer for them."""
    for arg in members(operation.args):
        if arg.only is Face.CLI:
            assert arg.cli is not None and operation.cli is not None, arg.name
        if arg.only is Face.MCP:
            assert operation.mcp is not None and operation.mcp.adapt is not None, arg.name
        if arg.only is Face.HTTP:
            pytest.fail(f"{operation.name}.{arg.name}: HTTP takes the call's arguments alone")


def test_names_are_unique_on_each_interface() -> None:
    assert len(BY_NAME) == len(OPERATIONS)
    routes = Counter((op.http.method, op.http.path) for op in OPERATIONS if op.http)
    tools = Counter(op.mcp.name for op in OPERATIONS if op.mcp)
    commands = Counter(op.cli.name for op in OPERATIONS if op.cli)
    for counts in (routes, tools, commands):
        assert max(counts.values()) == 1, counts.most_common(1)
    assert {name.split()[0] for name in commands if " " in name} <= set(GROUPS)


def test_every_model_named_exists_and_every_operation_reaches_the_brain_somehow() -> None:
    for operation in OPERATIONS:
        assert operation.http or operation.mcp or operation.cli, operation.name
        if operation.http is not None:
            assert issubclass(getattr(responses, operation.http.answer), responses.Out)
            if operation.http.body is not None:
                assert issubclass(body_model(operation.http.body), BaseModel)
        if operation.mcp is not None:
            assert issubclass(tool_model(operation.mcp.name), BaseModel)
        if operation.remote is not None:
            assert BY_NAME[operation.remote.by_id].http is not None
            assert BY_NAME[operation.remote.by_uri].http is not None
        for arg in members(operation.args):
            assert (arg.kind is Kind.ITEMS) == (arg.items is not None), arg.name


def test_a_group_s_members_are_plain_arguments() -> None:
    for operation in OPERATIONS:
        for arg in operation.args:
            if isinstance(arg, Group):
                assert all(isinstance(m, Arg) and m.only is None for m in arg.members)


def test_the_table_loads_with_the_standard_library_alone() -> None:
    """What the command line's fast path reads of it: no pydantic, no records or settings
    (their dataclasses cost milliseconds to make), nothing of the brain."""
    code = (
        "import sys, nexusbrain.operations, nexusbrain.cli.main, nexusbrain.cli.client;"
        "print('\\n'.join(sorted(sys.modules)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    heavy = ("pydantic", "fastapi", "nexusbrain.records", "nexusbrain.config", "nexusbrain.views")
    assert [m for m in loaded if m.startswith(heavy) or m == "nexusbrain.brain"] == []


def test_help_lists_the_commands_without_what_runs_them() -> None:
    """`nexusbrain --help` lists the commands from their declarations alone: what answers and
    prints one (cli/answers.py, cli/render.py) loads when a command runs, and logging,
    difflib and shlex only where a message needs them."""
    code = (
        "import runpy, sys\n"
        "sys.argv = ['nexusbrain', '--help']\n"
        "try:\n"
        "    runpy.run_module('nexusbrain', run_name='__main__')\n"
        "except SystemExit:\n"
        "    print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "sources show" not in done.stdout and "sources" in done.stdout  # the group, listed
    loaded = set(done.stderr.split())
    assert "nexusbrain.operations" in loaded
    unneeded = {"nexusbrain.cli.answers", "nexusbrain.cli.render", "logging", "difflib", "shlex"}
    assert loaded & unneeded == set()


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op.cli], ids=lambda op: op.name)
def test_a_command_s_word_is_required_exactly_when_its_argument_is(operation: Operation) -> None:
    """A positional argument with a default (`ls [PREFIX]`) may be left out on the command line;
    a required one may not; a list of words (`graph add FROM TYPE TO`) takes any number."""
    from nexusbrain.cli.commands import command

    made = command(operation, operation.cli.name.split()[-1])  # type: ignore[union-attr]
    words = {p.name: p for p in made.params if p.param_type_name == "argument"}
    for arg in members(operation.args):
        if arg.cli is None or isinstance(arg.cli, Option):
            continue
        word = words[arg.name]
        assert word.required == (arg.required and not arg.cli.many), arg.name
        assert word.nargs == (-1 if arg.cli.many else 1), arg.name
