"""KubeSchedulerConfiguration's ``extenders``: decoding (v1 field names, strict) and ``validateExtenders``.

Validation is v1.35's (``pkg/scheduler/apis/config/validation``): a prioritizing extender needs a positive
weight, at most one extender binds, managedResources names are valid extended resource names and unique across
extenders. kss also requires ``urlPrefix`` (kube-scheduler would only fail when first calling it).
"""

from __future__ import annotations

import re
from typing import Any

from kss_sim.scheduler.extender import DEFAULT_EXTENDER_TIMEOUT_SECONDS, ExtenderConfig, ManagedResource
from kss_sim.scheduler.resources import is_extended_resource_name, qualified_name_errors

_FIELDS = {
    "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "bindVerb", "weight", "enableHTTPS", "tlsConfig",
    "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable",
}  # fmt: skip
_TLS_FIELDS = {"insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData"}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ExtenderConfigError(ValueError):
    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field = field_path
        self.detail = message


def parse_duration(value: Any, path: str) -> float:
    """A metav1.Duration (Go's ``time.ParseDuration``: "30s", "1m30s", "500ms") in seconds."""
    if not isinstance(value, str) or not value:
        raise ExtenderConfigError(path, f'Invalid value: {value!r}: must be a duration such as "30s"')
    text = value[1:] if value[0] in "+-" else value
    sign = -1.0 if value[0] == "-" else 1.0
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if m is None:
            raise ExtenderConfigError(path, f"Invalid value: {value!r}: time: invalid duration {value!r}")
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if not text:
        raise ExtenderConfigError(path, f"Invalid value: {value!r}: time: invalid duration {value!r}")
    return sign * total


def _string(raw: dict[str, Any], key: str, path: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ExtenderConfigError(f"{path}.{key}", f"Invalid value: {value!r}: must be a string")
    return value


def _bool(raw: dict[str, Any], key: str, path: str) -> bool:
    value = raw.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ExtenderConfigError(f"{path}.{key}", f"Invalid value: {value!r}: must be a boolean")
    return value


def parse_extenders(raw: Any) -> list[ExtenderConfig]:
    """The ``extenders`` list, decoded and validated; ExtenderConfigError names the offending field."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ExtenderConfigError("extenders", "must be a list")
    out: list[ExtenderConfig] = []
    binders = 0
    managed_seen: set[str] = set()
    for i, entry in enumerate(raw):
        path = f"extenders[{i}]"
        if not isinstance(entry, dict):
            raise ExtenderConfigError(path, "must be an object")
        for key in entry:
            if key not in _FIELDS:
                raise ExtenderConfigError(f"{path}.{key}", "unknown field")
        url = _string(entry, "urlPrefix", path)
        if not url:
            raise ExtenderConfigError(f"{path}.urlPrefix", "Required value")
        weight = entry.get("weight", 0)
        if weight is None:
            weight = 0
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise ExtenderConfigError(f"{path}.weight", f"Invalid value: {weight!r}: must be an integer")
        prioritize = _string(entry, "prioritizeVerb", path)
        if prioritize and weight <= 0:
            raise ExtenderConfigError(
                f"{path}.weight", f"Invalid value: {weight}: must have a positive weight applied to it"
            )
        bind = _string(entry, "bindVerb", path)
        if bind:
            binders += 1
        tls = entry.get("tlsConfig")
        if tls is not None:
            if not isinstance(tls, dict):
                raise ExtenderConfigError(f"{path}.tlsConfig", "must be an object")
            for key in tls:
                if key not in _TLS_FIELDS:
                    raise ExtenderConfigError(f"{path}.tlsConfig.{key}", "unknown field")
        timeout_raw = entry.get("httpTimeout")
        timeout = 0.0 if timeout_raw is None else parse_duration(timeout_raw, f"{path}.httpTimeout")
        if timeout <= 0:
            timeout = DEFAULT_EXTENDER_TIMEOUT_SECONDS  # NewHTTPExtender: zero means the default
        resources: list[ManagedResource] = []
        managed = entry.get("managedResources") or []
        if not isinstance(managed, list):
            raise ExtenderConfigError(f"{path}.managedResources", "must be a list")
        for j, res in enumerate(managed):
            rpath = f"{path}.managedResources[{j}]"
            if not isinstance(res, dict):
                raise ExtenderConfigError(rpath, "must be an object")
            for key in res:
                if key not in ("name", "ignoredByScheduler"):
                    raise ExtenderConfigError(f"{rpath}.{key}", "unknown field")
            name = _string(res, "name", rpath)
            errs = qualified_name_errors(name)
            if errs:
                raise ExtenderConfigError(f"{rpath}.name", f"Invalid value: {name!r}: {errs[0]}")
            if not is_extended_resource_name(name):
                raise ExtenderConfigError(
                    f"{rpath}.name", f"Invalid value: {name!r}: is an invalid extended resource name"
                )
            if name in managed_seen:
                raise ExtenderConfigError(
                    f"{rpath}.name", f"Invalid value: {name!r}: duplicate extender managed resource name"
                )
            managed_seen.add(name)
            resources.append(ManagedResource(name, _bool(res, "ignoredByScheduler", rpath)))
        out.append(
            ExtenderConfig(
                url_prefix=url,
                filter_verb=_string(entry, "filterVerb", path),
                preempt_verb=_string(entry, "preemptVerb", path),
                prioritize_verb=prioritize,
                bind_verb=bind,
                weight=weight,
                enable_https=_bool(entry, "enableHTTPS", path),
                tls_config=dict(tls) if tls is not None else None,
                http_timeout=timeout,
                node_cache_capable=_bool(entry, "nodeCacheCapable", path),
                managed_resources=tuple(resources),
                ignorable=_bool(entry, "ignorable", path),
            )
        )
    if binders > 1:
        raise ExtenderConfigError(
            "extenders",
            f'Invalid value: "found {binders} extenders implementing bind": only one extender can implement bind',
        )
    return out
