"""`@perf_case`: grids expand to readable ids, models get the parameters they name, mistakes are caught at
declaration (and given to the plugin as that case's one-line error: see test_plugin.py)."""

from __future__ import annotations

import itertools
import os
import re

import pytest
import torch

from perfguard import CaseSpec, ConfigError, perf_case
from perfguard.case import InvalidCase


HERE = os.path.relpath(__file__)  # how messages name this file: relative to the current folder


def vector_add(n, dtype, device):
    return lambda: None


def declare(setup=vector_add, **options):
    return perf_case(**options)(setup)


def refusal(setup=vector_add, **options) -> str:
    """The one line of a declaration @perf_case refused: it returns an InvalidCase holding it, which
    raises it when the case is used."""
    case = declare(setup, **options)
    assert isinstance(case, InvalidCase), case
    for use in (lambda: case.instances("cpu"), lambda: case(device="cpu")):
        with pytest.raises(ConfigError, match=re.escape(case.error)):
            use()
    return case.error


GRID = {"n": [2**20, 2**24], "dtype": [torch.float16, torch.float32]}


# --- grids and ids -------------------------------------------------------------------------------


def test_a_grid_expands_to_one_readable_id_per_point_in_declaration_order():
    spec = declare(params=GRID)
    assert [i.id for i in spec.instances("cpu")] == [
        "vector_add[n=1048576-dtype=float16]",
        "vector_add[n=1048576-dtype=float32]",
        "vector_add[n=16777216-dtype=float16]",
        "vector_add[n=16777216-dtype=float32]",
    ]


def test_a_case_without_params_is_one_instance_named_after_the_function():
    @perf_case
    def copy(device):
        return lambda: None

    assert isinstance(copy, CaseSpec)
    assert [i.id for i in copy.instances("cpu")] == ["copy"]


def test_name_replaces_the_function_name_in_ids():
    spec = declare(params={"n": [1]}, name="add_fp16", setup=lambda n: (lambda: None))
    assert [i.id for i in spec.instances("cpu")] == ["add_fp16[n=1]"]


def test_tuple_values_read_as_shapes_in_ids():
    spec = declare(params={"shape": [(8, 4096)]}, setup=lambda shape: (lambda: None), name="rows")
    assert spec.instances("cpu")[0].id == "rows[shape=8x4096]"


def test_the_decorated_function_stays_callable_as_the_setup():
    calls = []

    @perf_case(params={"n": [3]})
    def setup(n, device):
        calls.append((n, device))
        return lambda: n

    assert setup(n=5, device="cpu")() == 5
    assert calls == [(5, "cpu")]


def test_setup_gets_its_parameters_and_device_only_if_it_names_them():
    spec = declare(params={"n": [7]}, setup=lambda n: (lambda: n))
    (instance,) = spec.instances("cpu")
    assert instance.setup_kwargs("cuda") == {"n": 7}
    spec = declare(params={"n": [7]}, setup=lambda n, device: (lambda: n))
    assert spec.instances("cpu")[0].setup_kwargs("cuda") == {"n": 7, "device": "cuda"}


def test_params_for_the_record_keep_numbers_and_spell_out_other_values():
    spec = declare(params={"n": [1024], "dtype": [torch.bfloat16], "scale": [0.5], "causal": [True]},
                   setup=lambda n, dtype, scale, causal: (lambda: None))
    assert spec.instances("cpu")[0].params_for_record() == {"n": 1024, "dtype": "bfloat16", "scale": 0.5, "causal": True}


def test_params_may_be_a_callable_of_the_device_kind():
    spec = declare(params=lambda device: {"n": [2**30] if device == "cuda" else [2**10]}, setup=lambda n: (lambda: None))
    assert [i.id for i in spec.instances("cpu")] == ["<lambda>[n=1024]"]
    assert [i.id for i in spec.instances("cuda")] == ["<lambda>[n=1073741824]"]


def test_a_grid_callable_is_validated_when_it_is_expanded():
    spec = declare(params=lambda device: {"m": [1]}, setup=lambda n=1: (lambda: None), name="sized")
    with pytest.raises(ConfigError, match=rf"perf_case 'sized' \({re.escape(HERE)}:\d+\): setup does not take parameter\(s\) m"):
        spec.instances("cpu")
    broken = declare(params=lambda device: 1 / 0, setup=lambda: (lambda: None), name="broken")
    with pytest.raises(ConfigError, match=r"perf_case 'broken' \(.*\): params\('cpu'\) raised ZeroDivisionError"):
        broken.instances("cpu")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        # A value given twice, or two that print alike.
        ({"n": [1024, 2048, 1024], "dtype": [torch.float32]}, r"params\['n'\] gives 1024 more than once \(\[1024, 2048, 1024\]\)"),
        ({"n": [1024, "1024"], "dtype": [torch.float32]}, r"params\['n'\] gives 1024 more than once"),
        # Two that print differently until the id escapes them for the terminal.
        ({"n": ["a\x00", "a\\x00"], "dtype": [torch.float32]},
         r"params\['n'\] gives 'a\\x00' and 'a\\\\x00', which name one test, vector_add\[n=a\\x00-dtype=float32\]"),
        # Two points of several parameters: a value holding '-' and '=' reads as the next parameter.
        ({"n": ["1-dtype=float32", "1"], "dtype": ["float16", "float32-dtype=float16"]},
         r"params \{'n': '1-dtype=float32', 'dtype': 'float16'\} and \{'n': '1', 'dtype': 'float32-dtype=float16'\} "
         r"name one test, vector_add\[n=1-dtype=float32-dtype=float16\]"),
    ],
)
def test_two_points_of_a_grid_that_would_name_one_test_are_refused(params, expected):
    # Two tests of one id are two runs pytest makes and one record of the two: the rule is the id's, one
    # a point, whatever makes two alike.
    error = refusal(params=params)
    assert re.search(expected, error), error
    assert "\n" not in error
    spec = declare(params=lambda device: params, name="late")  # a grid callable: when it is expanded
    with pytest.raises(ConfigError, match=r"perf_case 'late' .*name one test|perf_case 'late' .*more than once"):
        spec.instances("cpu")


# --- bytes and flops -----------------------------------------------------------------------------


def test_bytes_and_flops_may_be_plain_numbers():
    (instance,) = declare(params={"n": [1], "dtype": [torch.float32]}, bytes=4096, flops=10).instances("cpu")
    assert instance.bytes_moved("cpu") == 4096.0
    assert instance.flop_count("cpu") == 10.0


def test_bytes_and_flops_callables_get_only_the_parameters_they_name():
    seen = {}

    def flops(n):  # names n only: dtype and device must not be passed
        seen["flops"] = n
        return 2 * n

    spec = declare(params=GRID, bytes=lambda n, dtype: 3 * n * dtype.itemsize, flops=flops)
    instance = spec.instances("cpu")[0]  # n=2**20, float16
    assert instance.bytes_moved("cpu") == 3 * 2**20 * 2
    assert instance.flop_count("cpu") == 2 * 2**20
    assert seen == {"flops": 2**20}


def test_a_bytes_model_may_name_the_device():
    spec = declare(params={"n": [1], "dtype": [torch.float32]}, bytes=lambda device: 100 if device == "cuda" else 1)
    (instance,) = spec.instances("cpu")
    assert (instance.bytes_moved("cpu"), instance.bytes_moved("cuda")) == (1.0, 100.0)


def test_absent_bytes_and_flops_are_none():
    (instance,) = declare(params={"n": [1], "dtype": [torch.float32]}).instances("cpu")
    assert instance.bytes_moved("cpu") is None and instance.flop_count("cpu") is None


def test_a_bytes_model_naming_an_unknown_parameter_fails_at_declaration():
    error = refusal(params={"n": [1], "dtype": [torch.float32]}, bytes=lambda n, m: n * m)
    assert re.search(r"perf_case 'vector_add'.*bytes.*needs argument 'm'", error)


def test_a_check_naming_an_unknown_parameter_fails_at_declaration():
    error = refusal(params={"n": [1], "dtype": [torch.float32]}, check=lambda out, expected: out == expected)
    assert re.search(r"perf_case 'vector_add'.*check.*needs argument 'expected'", error)


def test_a_bytes_model_that_raises_or_goes_negative_is_a_config_error_naming_the_instance():
    spec = declare(params={"n": [1], "dtype": [torch.float32]}, bytes=lambda n: n / 0)
    with pytest.raises(ConfigError, match=r"vector_add\[n=1-dtype=float32\]': bytes\(\.\.\.\) raised ZeroDivisionError"):
        spec.instances("cpu")[0].bytes_moved("cpu")
    spec = declare(params={"n": [1], "dtype": [torch.float32]}, flops=lambda n: -n)
    with pytest.raises(ConfigError, match=r"vector_add\[n=1-dtype=float32\]': flops must be a finite number >= 0"):
        spec.instances("cpu")[0].flop_count("cpu")


# --- mistakes fail at declaration, naming the case ------------------------------------------------


def test_an_unknown_keyword_fails_at_declaration_naming_it_and_the_close_one():
    message = refusal(params=GRID, thresold=5)
    assert "perf_case 'vector_add'" in message
    assert "unknown keyword 'thresold'" in message
    assert "did you mean 'threshold'?" in message
    assert "test_case_declaration.py" in message  # where the case is declared


def test_an_unknown_keyword_with_no_close_match_lists_the_known_ones():
    assert re.search(r"unknown keyword 'colour'; known keywords: name, params, bytes", refusal(params=GRID, colour="red"))


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"params": GRID, "cache": "warm"}, r"cache must be one of 'cold', 'hot', got 'warm'"),
        ({"params": GRID, "mode": "graphs"}, r"mode must be one of 'eager', 'graph', got 'graphs'"),
        ({"params": {"n": [], "dtype": [torch.float32]}}, r"params\['n'\] is empty"),
        ({"params": {"n": 5, "dtype": [torch.float32]}}, r"params\['n'\] must be a list of values"),
        ({"params": {"n": "abc", "dtype": [torch.float32]}}, r"params\['n'\] must be a list of values"),
        ({"params": [("n", [1])]}, r"params must be a dict"),
        ({"params": {**GRID, "m": [1]}}, r"setup does not take parameter\(s\) m"),
        ({"params": {"n": [1]}}, r"needs argument 'dtype', which is neither a parameter nor 'device'"),
        ({"params": {**GRID, "device": ["cpu"]}}, r"'device' is injected by perfguard; remove it from params"),
        ({"params": GRID, "bytes": -1}, r"bytes must be a finite number >= 0, got -1"),
        ({"params": GRID, "flops": float("nan")}, r"flops must be a finite number >= 0, got nan"),
        ({"params": GRID, "bytes": "a lot"}, r"bytes must be a number, got 'a lot'"),
        ({"params": GRID, "threshold": 0}, r"threshold must be a positive number, got 0"),
        ({"params": GRID, "budget_s": True}, r"budget_s must be a positive number, got True"),
        ({"params": GRID, "device_kinds": ("tpu",)}, r"device_kinds must be one of 'cuda', 'cpu', got 'tpu'"),
        ({"params": GRID, "check": "allclose"}, r"check must be callable"),
        ({"params": GRID, "name": ""}, r"name must be a non-empty string"),
        ({"params": GRID, "name": 3}, r"name must be a non-empty string"),
    ],
)
def test_a_bad_declaration_is_one_line_naming_the_case_and_where_it_is_declared(options, expected):
    error = refusal(**options)
    assert re.search(expected, error), error
    line = vector_add.__code__.co_firstlineno
    assert error.startswith(f"perf_case 'vector_add' ({HERE}:{line}): ")
    assert "\n" not in error


def test_errors_after_the_name_is_known_use_it_and_so_does_the_invalid_case():
    error = refusal(params=GRID, name="add_fp16", cache="warm")
    assert re.match(r"^perf_case 'add_fp16' \(.*test_case_declaration.py:\d+\): cache must be", error)
    assert declare(params=GRID, name="add_fp16", cache="warm").name == "add_fp16"
    assert declare(params=GRID, name="", cache="warm").name == "vector_add"  # an unusable name= falls back


def test_a_positional_argument_to_the_decorator_is_refused():
    with pytest.raises(ConfigError, match="perf_case takes keywords only"):
        perf_case(5)


def test_device_kinds_may_be_one_string():
    assert declare(params=GRID, device_kinds="cuda").device_kinds == ("cuda",)


def test_defaults_are_cold_cache_eager_mode_on_every_device_kind():
    spec = declare(params=GRID)
    assert (spec.cache, spec.mode, spec.device_kinds, spec.check) == ("cold", "eager", ("cuda", "cpu"), None)


def test_two_cases_of_one_id_are_told_to_rename_what_chose_the_name():
    from perfguard.case import rename_advice

    def setup(device):
        return lambda: None

    plain = perf_case(setup)
    named = perf_case(name="setup")(setup)
    assert not plain.named and named.named
    assert rename_advice(plain, plain) == "give one of them name=..."
    assert rename_advice(named, named) == "both give name='setup'; change one of them"
    assert rename_advice(named, plain) == "give this one a name= of its own"
    assert rename_advice(plain, named) == "give that one a name= of its own, or this one another name="


def test_the_keyword_table_of_docs_declaring_lists_every_keyword_once():
    # docs/declaring.md says its table lists every keyword @perf_case takes: a new keyword needs its row.
    from pathlib import Path

    from perfguard.case import OPTIONS

    page = Path(__file__).resolve().parents[1] / "docs" / "declaring.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    start = lines.index("| keyword | meaning |") + 2  # past the header and its rule
    rows = [line.split("|")[1] for line in itertools.takewhile(lambda line: line.startswith("|"), lines[start:])]
    documented = [name for cell in rows for name in re.findall(r"`(\w+)`", cell)]
    assert sorted(documented) == sorted(OPTIONS), f"{page}: the table's keywords differ from perfguard.case.OPTIONS"
