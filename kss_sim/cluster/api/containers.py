"""``pods/log``, ``pods/exec``, ``pods/attach`` and ``pods/portforward``: the subresources that reach a running
container through the kubelet. No container runs in kss (the simulated kubelet only moves a pod's status), so each
answers kube-apiserver's way of refusing a container that cannot be reached, a 400 ``Status``, with a message that
says what kss has instead: the pod's Events and the scheduler's record of every attempt.

A pod that does not exist is a 404 first, as kube-apiserver looks the pod up before it asks the kubelet; a verb the
subresource does not serve is a 405.
"""

from __future__ import annotations

from kss_sim.cluster.errors import BadRequest, MethodNotAllowed, NotFound
from kss_sim.cluster.storage.store import ClusterStore

SUBRESOURCES = ("log", "exec", "attach", "portforward")
# As kube-apiserver's discovery lists them: the options kind each takes and its verbs (log: a GET stream; the others
# an upgraded GET or POST, "create" and "get").
OPTIONS_KIND = {
    "log": "PodLogOptions",
    "exec": "PodExecOptions",
    "attach": "PodAttachOptions",
    "portforward": "PodPortForwardOptions",
}
VERBS = {"log": ["get"], "exec": ["create", "get"], "attach": ["create", "get"], "portforward": ["create", "get"]}
_METHODS = {sub: tuple({"get": "GET", "create": "POST"}[verb] for verb in verbs) for sub, verbs in VERBS.items()}
_WHAT = {
    "log": "there are no container logs",
    "exec": "there is no container to run a command in",
    "attach": "there is no container to attach to",
    "portforward": "there is no container port to forward to",
}


def refuse(store: ClusterStore, method: str, namespace: str, name: str, subresource: str) -> BadRequest:
    """The error to answer ``method`` on ``pods/{name}/{subresource}`` with (raised by the caller)."""
    if method not in _METHODS[subresource]:
        raise MethodNotAllowed(method.lower())
    if store.get("Pod", namespace, name) is None:
        raise NotFound("pods", name)
    return BadRequest(
        f'pod "{name}" runs in kss\'s simulated cluster, where no container runs: {_WHAT[subresource]}. '
        f"What happened to the pod is in its Events (kubectl describe pod {name} -n {namespace}) and every "
        f"scheduling attempt in kss's results (/ui/pods/{namespace}/{name})"
    )
