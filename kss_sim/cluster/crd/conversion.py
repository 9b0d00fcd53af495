"""A CRD's ``spec.conversion``: its validation, and the ``Webhook`` strategy's call, as apiextensions-apiserver
makes it.

A CRD whose versions differ in shape names a conversion webhook; kube-apiserver sends it a
``apiextensions.k8s.io/v1`` (or ``v1beta1``: the first of ``conversionReviewVersions`` it knows)
``ConversionReview`` with the objects and the ``desiredAPIVersion``, over HTTPS (the ``caBundle`` the CA to trust,
the system's when empty), and takes back the converted objects: the same number, each of the same kind, name,
namespace and UID; of their metadata only labels and annotations may change (the rest is the original's). Any
failure fails the request: a Status of code 500 whose message is ``conversion webhook for <group>/<version>,
Kind=<kind> failed: ...`` (kube's own words; its reason is empty, which kubectl prints as ``Error from server:``).

The call is synchronous with a bounded timeout (kube-apiserver's webhook client's 30 s): the API's handlers
run it in the request's path, so a slow webhook slows the requests that need it, as on a cluster. A ``service``
reference is called at ``https://<name>.<namespace>.svc:<port><path>``, which resolves only where that name does
(kss runs no services).
"""

from __future__ import annotations

import base64
import ssl
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from kss_sim.cluster.errors import ApiError, Cause, forbidden, invalid, not_supported, required

STRATEGIES = ("None", "Webhook")
REVIEW_VERSIONS = ("v1", "v1beta1")
TIMEOUT_SECONDS = 30.0
_META_KEPT = ("labels", "annotations")  # what a webhook may change in an object's metadata


class ConversionFailed(ApiError):
    """The webhook could not convert: kube-apiserver's 500 with an unknown reason."""

    code = 500
    reason = ""

    def to_status(self) -> dict[str, Any]:
        status = super().to_status()
        del status["reason"]  # Go leaves the empty reason out (omitempty)
        return status


@dataclass(frozen=True, slots=True)
class Webhook:
    """A CRD's conversion webhook: where to call it, whom to trust, which ConversionReview version to send."""

    url: str
    ca_bundle: bytes  # PEM; empty: the system's CAs
    review_version: str  # v1 or v1beta1

    def convert(self, objects: list[dict[str, Any]], desired_api_version: str) -> list[dict[str, Any]]:
        """``objects`` (one kind, one version) converted to ``desired_api_version``; ``ConversionFailed``."""
        if not objects:
            return []
        source = objects[0]
        group_version = str(source.get("apiVersion") or "")
        failed = f"conversion webhook for {group_version}, Kind={source.get('kind', '')} failed"
        request_uid = str(uuid.uuid4())
        review = {
            "apiVersion": f"apiextensions.k8s.io/{self.review_version}",
            "kind": "ConversionReview",
            "request": {"uid": request_uid, "desiredAPIVersion": desired_api_version, "objects": objects},
        }
        try:
            with httpx.Client(verify=self._trust(), timeout=TIMEOUT_SECONDS) as client:
                answer = client.post(
                    self.url,
                    content=orjson.dumps(review),
                    headers={"Content-Type": "application/json", "Accept": "application/json"},
                )
        except (httpx.HTTPError, ssl.SSLError, ValueError) as exc:
            raise ConversionFailed(f'{failed}: Post "{self.url}": {exc}') from None
        if answer.status_code // 100 != 2:
            raise ConversionFailed(f"{failed}: the server responded with the status code {answer.status_code}")
        try:
            converted = self._read(orjson.loads(answer.content), request_uid)
        except orjson.JSONDecodeError as exc:
            raise ConversionFailed(f"{failed}: {exc}") from None
        except ValueError as exc:
            raise ConversionFailed(f"{failed}: {exc}") from None
        if len(converted) != len(objects):
            raise ConversionFailed(
                f"conversion webhook for {group_version}, Kind={source.get('kind', '')} returned "
                f"{len(converted)} objects, expected {len(objects)}"
            )
        out = []
        for index, (original, result) in enumerate(zip(objects, converted, strict=True)):
            problem = _checked(original, result, desired_api_version)
            if problem:
                raise ConversionFailed(
                    f"conversion webhook for {group_version}, Kind={source.get('kind', '')} returned invalid "
                    f"converted object at index {index}: {problem}"
                )
            out.append(_with_original_meta(original, result))
        return out

    def _trust(self) -> ssl.SSLContext | bool:
        if not self.ca_bundle:
            return True
        return ssl.create_default_context(cadata=self.ca_bundle.decode("ascii", "replace"))

    def _read(self, review: Any, request_uid: str) -> list[dict[str, Any]]:
        """The converted objects of a ConversionReview answer (ValueError with kube's words otherwise)."""
        if not isinstance(review, dict):
            raise ValueError("the response is not a ConversionReview")
        if self.review_version == "v1":
            got = f"{review.get('apiVersion', '')}, Kind={review.get('kind', '')}"
            if (review.get("apiVersion"), review.get("kind")) != ("apiextensions.k8s.io/v1", "ConversionReview"):
                raise ValueError(
                    f"expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {got}"
                )
        response = review.get("response")
        if not isinstance(response, dict):
            raise ValueError("no response provided")
        if self.review_version == "v1" and response.get("uid") != request_uid:
            raise ValueError(f'expected response.uid="{request_uid}", got "{response.get("uid", "")}"')
        result = response.get("result") or {}
        if result.get("status") != "Success":
            if result.get("message"):
                raise ValueError(str(result["message"]))
            raise ValueError(f"response.result.status was '{result.get('status', '')}', not 'Success'")
        objects = response.get("convertedObjects") or []
        if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
            raise ValueError("response.convertedObjects must be a list of objects")
        return objects


def _checked(original: Mapping[str, Any], result: Mapping[str, Any], desired: str) -> str:
    """What is wrong with one converted object (kube's ``validateConvertedObject``), "" if nothing."""
    if result.get("apiVersion") != desired:
        return f"invalid apiVersion {result.get('apiVersion')!r}, expected {desired!r}"
    before, after = original.get("metadata") or {}, result.get("metadata") or {}
    for what, key in (("kind", None), ("name", "name"), ("namespace", "namespace"), ("UID", "uid")):
        expected = original.get("kind") if key is None else before.get(key, "")
        actual = result.get("kind") if key is None else after.get(key, "")
        if (expected or "") != (actual or ""):
            return f"must have the same {what}: {expected or ''} != {actual or ''}"
    for key in _META_KEPT:
        values = after.get(key)
        if values is not None and (
            not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values())
        ):
            return f"invalid metadata.{key} in converted object"
    return ""


def _with_original_meta(original: Mapping[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The converted object with the original's metadata but for its labels and annotations (kube's
    ``restoreObjectMeta``)."""
    meta = dict(original.get("metadata") or {})
    converted_meta = result.get("metadata") or {}
    for key in _META_KEPT:
        if converted_meta.get(key) is None:
            meta.pop(key, None)
        else:
            meta[key] = dict(converted_meta[key])
    return {**result, "metadata": meta}


def webhook_of(spec: Mapping[str, Any]) -> Webhook | None:
    """The CRD's conversion webhook when its strategy is ``Webhook`` (its spec validated first)."""
    conversion = spec.get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return None
    webhook = conversion.get("webhook") or {}
    config = webhook.get("clientConfig") or {}
    url = config.get("url")
    if not url:
        service = config.get("service") or {}
        url = f"https://{service.get('name')}.{service.get('namespace')}.svc:{service.get('port', 443)}"
        url += str(service.get("path") or "")
    versions = [v for v in webhook.get("conversionReviewVersions") or [] if v in REVIEW_VERSIONS]
    bundle = config.get("caBundle") or ""
    return Webhook(
        url=str(url),
        ca_bundle=base64.b64decode(bundle) if isinstance(bundle, str) else b"",
        review_version=versions[0] if versions else "v1",
    )


def validate(spec: Mapping[str, Any]) -> list[Cause]:
    """``spec.conversion`` as kube-apiserver validates it (the strategy, the webhook's client config and review
    versions)."""
    conversion = spec.get("conversion")
    if not isinstance(conversion, Mapping):
        return []
    path = "spec.conversion"
    strategy = conversion.get("strategy")
    webhook = conversion.get("webhook")
    if strategy not in STRATEGIES:
        return [not_supported(f"{path}.strategy", strategy, list(STRATEGIES))]
    if strategy == "None":
        if webhook is not None:
            return [forbidden(f"{path}.webhook", "should not be set when strategy is not set to Webhook")]
        return []
    causes: list[Cause] = []
    if spec.get("preserveUnknownFields"):
        causes.append(
            invalid(
                f"{path}.strategy",
                strategy,
                "must be None if spec.preserveUnknownFields is true",
            )
        )
    if not isinstance(webhook, Mapping):
        return [*causes, required(f"{path}.webhook", "required when strategy is set to Webhook")]
    config = webhook.get("clientConfig")
    if not isinstance(config, Mapping):
        causes.append(required(f"{path}.webhook.clientConfig", "required when strategy is set to Webhook"))
    else:
        causes += _client_config(config, f"{path}.webhook.clientConfig")
    versions = webhook.get("conversionReviewVersions") or []
    if not any(v in REVIEW_VERSIONS for v in versions):
        shown = "[]string{" + ", ".join(f'"{v}"' for v in versions) + "}"
        causes.append(
            Cause(
                f"{path}.webhook.conversionReviewVersions",
                "FieldValueInvalid",
                f"Invalid value: {shown}: must include at least one of v1, v1beta1",
            )
        )
    return causes


def _client_config(config: Mapping[str, Any], path: str) -> list[Cause]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(path, "exactly one of url or service is required")]
    if url is not None:
        parts = urlsplit(str(url))
        if parts.scheme != "https":
            return [invalid(f"{path}.url", url, "'https' is the only allowed URL scheme")]
        if not parts.hostname:
            return [invalid(f"{path}.url", url, "host must be specified")]
        if parts.username or parts.password:
            return [invalid(f"{path}.url", url, "user information is not permitted in the URL")]
        if parts.fragment:
            return [invalid(f"{path}.url", url, "fragments are not permitted in the URL")]
        if parts.query:
            return [invalid(f"{path}.url", url, "query parameters are not permitted in the URL")]
        return []
    if not isinstance(service, Mapping):
        return [required(f"{path}.service", "")]
    causes = []
    if not service.get("name"):
        causes.append(required(f"{path}.service.name", "service name is required"))
    if not service.get("namespace"):
        causes.append(required(f"{path}.service.namespace", "service namespace is required"))
    return causes
