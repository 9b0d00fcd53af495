"""Which API group versions a run serves: each release's defaults, changed by ``--runtime-config`` as kube-apiserver's
flag changes them (``resource.k8s.io/v1beta1=true,api/beta=false``).

Since v1.24 (KEP-3136) a beta API is off by default: kube-apiserver serves a beta group version only when
``--runtime-config`` enables it. The DRA group shows it best: resource.k8s.io/v1beta1 (v1.32) and v1beta2 (v1.33)
are off by default in every release, resource.k8s.io/v1 is on from v1.34, when it went GA (``RESOURCE_VERSIONS``;
docs/versions.md has the table and its sources). kss applies the flag to every group version it serves, with one
concession: its alpha workload-scheduling kinds stay served by their feature gate alone, as before the flag existed.

The flag's syntax and errors are upstream's (k8s.io/apiserver's resourceconfig.MergeAPIResourceConfigs): comma-
separated ``key=value`` pairs, a key alone meaning true; ``api/all``, ``api/ga``, ``api/beta`` and ``api/alpha``
(values true or false) applied first, in that order, then ``group/version`` and ``group/version/resource`` keys
(values as Go's strconv.ParseBool reads them), a resource's own setting above its version's. A key of a group the
release does not have is ignored; a version the release does not have, of a group it has, is refused.
"""

from __future__ import annotations

from collections.abc import Mapping

# The kube-apiserver of each minor version registers these resource.k8s.io versions (k8s.io/api/resource of the
# vendored trees; v1alpha3 serves only DeviceTaintRule from v1.34 on, which kss does not serve).
RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_VERSIONS: dict[int, tuple[str, ...]] = {
    33: ("v1beta2", "v1beta1", "v1alpha3"),
    34: ("v1", "v1beta2", "v1beta1", "v1alpha3"),
    35: ("v1", "v1beta2", "v1beta1", "v1alpha3"),
    36: ("v1", "v1beta2", "v1beta1", "v1alpha3"),
}
# The groups whose every registered version kss knows per release: a version not among them is refused.
_REGISTERED: dict[str, dict[int, tuple[str, ...]]] = {RESOURCE_GROUP: RESOURCE_VERSIONS}
# Alpha and beta group versions kss serves by their feature gate alone (a concession: see the module's docstring).
_SERVED_BY_GATE = frozenset({("scheduling.k8s.io", "v1alpha1"), ("scheduling.k8s.io", "v1alpha2")})
# kube-apiserver's groupVersionMatchersOrder: the keys that match every version of a stability, applied first.
_MATCHERS = ("api/all", "api/ga", "api/beta", "api/alpha")
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

RuntimeConfig = Mapping[str, str]
NO_RUNTIME_CONFIG: RuntimeConfig = {}


def parse_runtime_config(text: str) -> dict[str, str]:
    """``--runtime-config``'s value as kube's ConfigurationMap reads it: ``key=value`` pairs separated by commas,
    a key without ``=`` mapped to "" (true)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, _, value = part.partition("=")
        out[key.strip()] = value.strip()
    return out


def _stability(version: str) -> str:
    return "alpha" if "alpha" in version else "beta" if "beta" in version else "ga"


def _bool(key: str, value: str) -> bool:
    if value == "" or value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f'invalid value of {key}: {value}, err: strconv.ParseBool: parsing "{value}": invalid syntax')


def check_runtime_config(config: RuntimeConfig, minor: int) -> None:
    """ValueError worded as kube-apiserver's for a value or key Kubernetes 1.``minor`` refuses."""
    for key, value in config.items():
        if key in _MATCHERS:
            if value not in ("true", "false"):
                raise ValueError(f"invalid value {key}={value}")
            continue
        tokens = key.split("/")
        if len(tokens) < 2 or len(tokens) > 3:
            continue  # upstream skips such keys
        group, version = tokens[0], tokens[1]
        if not version:
            raise ValueError(f"invalid key {key}")
        registered = _REGISTERED.get(group, {}).get(minor)
        if registered is not None and version not in registered:
            raise ValueError(f"group version {group}/{version} that has not been registered")
        _bool(key, value)
        if len(tokens) == 3 and tokens[2].lower() != tokens[2]:
            raise ValueError(
                f'invalid key {key}: group/version/resource and resource is always lowercase plural, not "{tokens[2]}"'
            )


def _default(group: str, version: str, minor: int) -> bool:
    """Whether Kubernetes 1.``minor`` serves a group version kss has with no ``--runtime-config``."""
    if (group, version) in _SERVED_BY_GATE:
        return True
    registered = _REGISTERED.get(group)
    if registered is not None and version not in registered.get(minor, ()):
        return False
    return _stability(version) == "ga"


def api_enabled(group: str, version: str, plural: str, minor: int, config: RuntimeConfig = NO_RUNTIME_CONFIG) -> bool:
    """Whether ``plural`` in ``group/version`` is served by Kubernetes 1.``minor`` under ``config`` (checked
    already). The core group's v1 is always served."""
    if not group:
        return True
    registered = _REGISTERED.get(group)
    if registered is not None and version not in registered.get(minor, ()):
        return False  # the release does not have it: nothing enables it
    enabled = _default(group, version, minor)
    for matcher in _MATCHERS:
        if matcher in config and (matcher == "api/all" or matcher == f"api/{_stability(version)}"):
            enabled = config[matcher] == "true"
    version_key = f"{group}/{version}"
    if version_key in config:
        enabled = _bool(version_key, config[version_key])
    resource_key = f"{group}/{version}/{plural}"
    if resource_key in config:
        enabled = _bool(resource_key, config[resource_key])
    return enabled
