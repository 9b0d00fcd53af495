"""TokenReview, SubjectAccessReview and SelfSubjectAccessReview: what delegated authentication and authorization
ask the API server (kube-scheduler's own HTTPS endpoint, an aggregated server, ``kubectl auth can-i``).

kss has one credential, the bearer token it was started with (``KSS_API_TOKEN``; none: every request is let in),
and no RBAC: a review authenticates that token (any token when there is none) as one user of ``system:masters``,
and allows every access, as the API itself does. Answered, never stored, as kube-apiserver answers them (201)."""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.errors import BadRequest, Invalid, required
from kss_sim.cluster.kinds.registry import KindInfo

USER = {"username": "kss-admin", "uid": "kss-admin", "groups": ["system:masters", "system:authenticated"]}
ALLOWED_REASON = "kss authorizes every request it authenticates"


def answer(info: KindInfo, body: Any, api_token: str) -> dict[str, Any]:
    """The review ``body`` asks for with its status filled in; BadRequest / Invalid for a malformed one."""
    if not isinstance(body, dict) or body.get("kind", info.kind) != info.kind:
        raise BadRequest(f"the object provided is unrecognized (must be of type {info.api_kind})")
    spec = body.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    review = {
        "kind": info.kind,
        "apiVersion": info.api_version,
        "metadata": {"creationTimestamp": None, **(body.get("metadata") or {})},
        "spec": spec,
    }
    if info.kind == "TokenReview":
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            raise Invalid(info.kind, "", [required("spec.token")], group=info.group)
        authenticated = not api_token or token == api_token
        status: dict[str, Any] = {"authenticated": authenticated}
        if authenticated:
            status["user"] = USER
            if spec.get("audiences"):
                status["audiences"] = spec["audiences"]
        else:
            status["error"] = "invalid bearer token"
    else:
        if not spec.get("resourceAttributes") and not spec.get("nonResourceAttributes"):
            raise Invalid(
                info.kind,
                "",
                [required("spec.resourceAttributes", "exactly one of nonResourceAttributes or resourceAttributes")],
                group=info.group,
            )
        status = {"allowed": True, "reason": ALLOWED_REASON}
    review["status"] = status
    return review
