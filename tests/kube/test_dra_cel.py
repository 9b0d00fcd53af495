"""DRA CEL selectors against upstream's compile_test.go cases (k8s.io/dynamic-resource-allocation/cel), v1.35's
environment (no list-type attributes, no `includes`)."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.kube.dra.cel import (
    CelCompileError,
    CelEvaluationError,
    DeviceView,
    SelectorCache,
    compile_selector,
    device_view,
    selector_problems,
    validation_errors,
)

DRIVER = "dra.example.com"


def _device(
    driver: str = "",
    attributes: dict[str, dict[str, Any]] | None = None,
    capacity: dict[str, str] | None = None,
    allow_multiple_allocations: bool = False,
) -> DeviceView:
    return DeviceView(
        driver=driver,
        attributes=attributes or {},
        capacity={name: {"value": value} for name, value in (capacity or {}).items()},
        allow_multiple_allocations=allow_multiple_allocations,
    )


MATCHES: dict[str, tuple[str, DeviceView, bool]] = {
    "true": ("true", _device(), True),
    "false": ("false", _device(), False),
    "domain-check-negative": ('"no-such-domain" in device.attributes', _device(), False),
    "domain-check-positive": (
        '"dra.example.com" in device.attributes',
        _device(attributes={"dra.example.com/something": {"bool": True}}),
        True,
    ),
    "empty-driver-name": ('device.driver == ""', _device(), True),
    "real-driver-name": ('device.driver == "dra.example.com"', _device(DRIVER), True),
    "driver-name-qualifier": (
        'device.attributes["dra.example.com"].name',
        _device(DRIVER, {"name": {"bool": True}}),
        True,
    ),
    "driver-name-qualifier-map-lookup": (
        'device.attributes["dra.example.com"]["name"]',
        _device(DRIVER, {"name": {"bool": True}}),
        True,
    ),
    "bind": (
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        _device(DRIVER, {"name": {"bool": True}}),
        True,
    ),
    "qualified-attribute-name": (
        'device.attributes["other.example.com"].name',
        _device(DRIVER, {"other.example.com/name": {"bool": True}}),
        True,
    ),
    "int": ('device.attributes["dra.example.com"].name > 0', _device(DRIVER, {"name": {"int": 1}}), True),
    "string": (
        'device.attributes["dra.example.com"].name == "fish"',
        _device(DRIVER, {"name": {"string": "fish"}}),
        True,
    ),
    "version": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        _device(DRIVER, {"name": {"version": "1.0.0"}}),
        True,
    ),
    "version_v": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        _device(DRIVER, {"name": {"version": "1.0.0"}}),
        True,
    ),
    "quantity": (
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        _device(DRIVER, capacity={"name": "1Mi"}),
        True,
    ),
    "check-positive": (
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        _device(DRIVER, capacity={"name": "1Mi"}),
        True,
    ),
    "check-negative": (
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        _device(),
        True,
    ),
    "all": (
        """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
""",
        _device(
            DRIVER,
            {"bool": {"bool": True}, "int": {"int": 1}, "string": {"string": "fish"}, "version": {"version": "1.0.0"}},
            {"quantity": "1Mi"},
        ),
        True,
    ),
    "many": (
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && '
        'device.attributes["dra.example.com"].c',
        _device(DRIVER, {"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}}),
        True,
    ),
    "check_attribute_domains": (
        'device.attributes.exists_one(x, x == "dra.example.com")',
        _device(DRIVER, {"services": {"string": "some_example_value"}}),
        True,
    ),
    "check_attribute_ids": (
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        _device(DRIVER, {"services": {"string": "some_example_value"}}),
        True,
    ),
    "split_attribute": (
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        _device(DRIVER, {"services": {"string": "some_example_value"}}),
        True,
    ),
    "regexp_attribute": (
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        _device(DRIVER, {"services": {"string": "asymetric"}}),
        True,
    ),
    "check_capacity_domains": (
        'device.capacity.exists_one(x, x == "dra.example.com")',
        _device(DRIVER, capacity={"memory": "1Mi"}),
        True,
    ),
    "check_capacity_ids": (
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        _device(DRIVER, capacity={"memory": "1Mi"}),
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(MATCHES))
def test_upstream_matches(name: str) -> None:
    expression, device, expected = MATCHES[name]
    assert compile_selector(expression).matches(device) is expected


@pytest.mark.parametrize(
    ("expression", "device", "message"),
    [
        # An unknown domain reads as an empty map, so the error names the attribute.
        (
            'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
            _device(),
            "no such key: noSuchAttr",
        ),
        (
            'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
            _device(),
            "no such key: noSuchAttr",
        ),
        (
            'device.attributes["dra.example.com"].model == "a100"',
            _device(DRIVER, {"memory": {"int": 1}}),
            "no such key: model",
        ),
        (
            'device.attributes["dra.example.com"].name',
            _device(DRIVER, {"name": {"string": "fish"}}),
            "CEL result of type string could not be converted to bool: "
            "unsupported native conversion from string to 'bool'",
        ),
        (
            'device.attributes["dra.example.com"].name',
            _device(DRIVER, {"name": {"int": 7}}),
            "CEL result of type int could not be converted to bool: unsupported type conversion from 'int' to bool",
        ),
        (
            'device.capacity["dra.example.com"].memory',
            _device(DRIVER, capacity={"memory": "1Gi"}),
            "CEL result of type kubernetes.Quantity could not be converted to bool: "
            "type conversion error from 'Quantity' to 'bool'",
        ),
        (
            'quantity("abc") == quantity("1")',
            _device(),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        ('quantity("1.5.3") == quantity("1")', _device(), "unable to parse quantity's suffix"),
        ('semver("1.0") == semver("1.0.0")', _device(), "No Major.Minor.Patch elements found"),
        ('semver("01.0.0") == semver("1.0.0")', _device(), 'Major number must not contain leading zeroes "01"'),
        (
            "device.driver == 'x'",
            _device(DRIVER, {"v": {"version": "1.x"}}),
            "attribute v: parse semantic version: No Major.Minor.Patch elements found",
        ),
    ],
)
def test_evaluation_errors(expression: str, device: DeviceView, message: str) -> None:
    with pytest.raises(CelEvaluationError) as raised:
        compile_selector(expression).matches(device)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1", "must evaluate to bool or the unknown type, not int"),
        ("device.driver", "must evaluate to bool or the unknown type, not string"),
        ("[true]", "must evaluate to bool or the unknown type, not list(bool)"),
        ('{"a": 1}', "must evaluate to bool or the unknown type, not map(string, int)"),
        (
            "device.drivr == ''",
            "compilation failed: ERROR: <input>:1:7: undefined field 'drivr'\n | device.drivr == ''\n | ......^",
        ),
        (
            "device.allowMultipleAllocations == false",
            "compilation failed: ERROR: <input>:1:7: undefined field 'allowMultipleAllocations'\n"
            " | device.allowMultipleAllocations == false\n | ......^",
        ),
        (
            "foo == 1",
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n"
            " | foo == 1\n | ^",
        ),
        (
            'quantity("1") < quantity("2")',
            "compilation failed: ERROR: <input>:1:15: found no matching overload for '_<_' applied to "
            "'(kubernetes.Quantity, kubernetes.Quantity)'\n"
            ' | quantity("1") < quantity("2")\n | ..............^',
        ),
        (
            "device.driver == ",
            "compilation failed: ERROR: <input>:1:18: Syntax error: mismatched input '<EOF>' expecting "
            "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
            "IDENTIFIER}\n | device.driver == \n | .................^",
        ),
        # The quantity library declares sign(q) as a global overload only: a method call finds no overload.
        (
            'device.capacity["gpu.example.com"].memory.sign() == 1',
            "compilation failed: ERROR: <input>:1:47: found no matching overload for 'sign' applied to "
            "'kubernetes.Quantity.()'\n"
            ' | device.capacity["gpu.example.com"].memory.sign() == 1\n'
            " | ..............................................^",
        ),
        (
            'device.attributes["x"].y.semver(true) == 1',
            "compilation failed: ERROR: <input>:1:32: found no matching overload for 'semver' applied to "
            "'dyn.(bool)'\n"
            ' | device.attributes["x"].y.semver(true) == 1\n'
            " | ...............................^",
        ),
    ],
)
def test_compile_errors(expression: str, message: str) -> None:
    with pytest.raises(CelCompileError) as raised:
        compile_selector(expression)
    assert str(raised.value) == message
    assert validation_errors(expression) == [message]


def test_syntax_error_wording() -> None:
    with pytest.raises(CelCompileError) as raised:
        compile_selector("?!")
    text = str(raised.value)
    assert text.startswith("compilation failed: ERROR: <input>:1:1: Syntax error: extraneous input '?' expecting")
    assert "\nERROR: <input>:1:3: Syntax error:" in text


@pytest.mark.parametrize(
    ("allow", "expression", "expected"),
    [
        (True, "device.allowMultipleAllocations == true", True),
        (False, "device.allowMultipleAllocations == false", True),
        (True, "device.allowMultipleAllocations == false", False),
    ],
)
def test_allow_multiple_allocations_with_consumable_capacity(allow: bool, expression: str, expected: bool) -> None:
    selector = compile_selector(expression, consumable_capacity=True)
    assert selector.matches(_device(DRIVER, allow_multiple_allocations=allow)) is expected
    assert validation_errors(expression, consumable_capacity=True) == []


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('quantity("1Ki") == quantity("1024")', True),
        ('quantity("1") == quantity("1000m")', True),
        ('quantity("1.5").isInteger()', False),
        ('quantity("2k").asInteger() == 2000', True),
        ('quantity("500m").asApproximateFloat() == 0.5', True),
        ('quantity("1Gi").add(quantity("1Gi")) == quantity("2Gi")', True),
        ('quantity("1").add(2) == quantity("3")', True),
        ('sign(quantity("1").sub(quantity("2"))) == -1', True),
        ('quantity("1M").compareTo(quantity("1Mi")) == -1', True),
        ('quantity("1Mi").isLessThan(quantity("1M"))', False),
        ('isQuantity("1Gi") && !isQuantity("1.2.3")', True),
        ('semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3', True),
        ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True),
        ('semver("1.0.0-alpha.2").isLessThan(semver("1.0.0-alpha.10"))', True),
        ('semver("1.0.0-1").isLessThan(semver("1.0.0-alpha"))', True),
        ('semver("1.0.0+build1") == semver("1.0.0+build2")', True),
        ('semver("1.2.3").compareTo(semver("1.10.0")) == -1', True),
        ('semver("v1.2", true) == semver("1.2.0")', True),
        ('isSemver("1.2.3") && !isSemver("v1.2.3") && isSemver("01.2", true)', True),
        ('"gpu-a100".find("a[0-9]+") == "a100"', True),
        ('"a1b22c333".findAll("[0-9]+", 2) == ["1", "22"]', True),
        ('"Abc".lowerAscii() == "abc" && "a,b".split(",").size() == 2', True),
        ("sets.contains([1, 2, 3], [2])", True),
        ("[3, 1, 2].sort() == [1, 2, 3]", True),
        ("[1, 2].all(i, v, v > i)", True),
        ("{'a': 1}[?'b'].orValue(2) == 2", True),
        ("1 < 2.5 && 2.5 >= 2 && 1u < 2 && 'a' < 'b'", True),
    ],
)
def test_libraries(expression: str, expected: bool) -> None:
    assert compile_selector(expression).matches(_device()) is expected


def test_device_view_qualifies_names_with_the_driver() -> None:
    device = device_view(
        "gpu.nvidia.com",
        {
            "name": "gpu-0",
            "attributes": {"productName": {"string": "A100"}, "other.io/zone": {"string": "z1"}},
            "capacity": {"memory": {"value": "80Gi"}},
        },
    )
    assert set(device.attributes) == {"gpu.nvidia.com/productName", "other.io/zone"}
    assert set(device.capacity) == {"gpu.nvidia.com/memory"}
    selector = compile_selector(
        'device.attributes["gpu.nvidia.com"].productName == "A100" && device.attributes["other.io"].zone == "z1" && '
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) == 0'
    )
    assert selector.matches(device) is True
    # The same compiled selector on another device: nothing carried over from the first.
    with pytest.raises(CelEvaluationError, match=r"^no such key: productName$"):
        selector.matches(device_view("gpu.nvidia.com", {"name": "gpu-1"}))


def test_unknown_domain_does_not_leak_between_devices() -> None:
    selector = compile_selector('device.attributes["x.io"].size() == 0 || device.attributes["dra.example.com"].a')
    empty = _device(DRIVER, {"a": {"bool": False}})
    assert selector.matches(empty) is True
    assert selector.matches(_device(DRIVER, {"x.io/z": {"bool": True}, "a": {"bool": False}})) is False


def test_cache_keeps_upstream_size_and_drops_failures() -> None:
    cache = SelectorCache()
    assert cache.max_entries == 10
    first = cache.get_or_compile("true")
    assert cache.get_or_compile("true") is first
    for i in range(10):
        cache.get_or_compile(f"{i} == {i}")
    assert cache.get_or_compile("true") is not first  # evicted, least recently used
    with pytest.raises(CelCompileError):
        cache.get_or_compile("?!")


def test_too_long_expression() -> None:
    expression = "true && " * 2000 + "true"
    problems = selector_problems(expression)
    assert [p.reason for p in problems] == ["TooLong"]


def test_verdicts_are_kept_per_device_and_errors_repeat() -> None:
    device = _device(DRIVER, {"model": {"string": "a100"}})
    good = compile_selector('device.attributes["dra.example.com"].model == "a100"')
    bad = compile_selector('device.attributes["dra.example.com"].memory > 1')
    for _ in range(2):
        assert good.matches(device) is True
        with pytest.raises(CelEvaluationError, match=r"^no such key: memory$"):
            bad.matches(device)
    assert good.matches(_device(DRIVER, {"model": {"string": "h100"}})) is False
