"""A generated production-like cluster: nodes as a cloud provider's kubelet registers them, pods as Deployments
make them, nearly all bound to nodes and Running, a few hundred pending.

Sizes follow what a real cluster's objects weigh (a node ~5 kB of JSON with its labels, conditions and image list;
a pod ~3 kB with its owner, requests, probes, tolerations and status), so the bytes an import moves are realistic.
Deterministic for a seed. Used by ``bench/sync_import.py --synthetic``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # kss_sim is imported late (or not at all): the tree to measure is chosen at run time
    from kss_sim.kube.objects import Obj


ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
# (instance type, cpu cores, memory GiB, max pods)
INSTANCE_TYPES = (("m5.2xlarge", 8, 32, 58), ("m5.4xlarge", 16, 64, 234), ("c5.4xlarge", 16, 32, 234))
NAMESPACES = tuple(f"team-{i:02d}" for i in range(20))
# (app shape, cpu request millicores, memory request MiB); Deployments of a few shapes, as in production.
SHAPES = (("web", 250, 256), ("api", 500, 512), ("worker", 1000, 1024), ("cache", 200, 2048), ("batch", 100, 128))
IMAGES = (
    "registry.k8s.io/kube-proxy:v1.35.0",
    "docker.io/calico/node:v3.28.1",
    "docker.io/calico/cni:v3.28.1",
    "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.18.3",
    "registry.k8s.io/pause:3.10",
    "quay.io/prometheus/node-exporter:v1.8.2",
    "docker.io/fluent/fluent-bit:3.1.9",
    "registry.k8s.io/coredns/coredns:v1.11.3",
    "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.35.0",
    "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.12.0",
    "registry.k8s.io/sig-storage/livenessprobe:v2.14.0",
    "ghcr.io/example/web:1.42.0",
    "ghcr.io/example/api:2.7.3",
    "ghcr.io/example/worker:5.1.0",
)
TIME = "2026-11-20T08:00:00Z"


@dataclass(frozen=True, slots=True)
class Cluster:
    """What the generator made: the namespaces, nodes and pods, and how many pods are pending."""

    namespaces: list[Obj]
    nodes: list[Obj]
    pods: list[Obj]
    pending: int

    def snapshot(self) -> Obj:
        """The whole cluster as kube-scheduler-simulator's snapshot shape (``POST /simulator/v1/import``)."""
        return {"namespaces": self.namespaces, "nodes": self.nodes, "pods": self.pods}


def _hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def _uid(rng: random.Random) -> str:
    return f"{_hex(rng, 8)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 12)}"


def _suffix(rng: random.Random, n: int) -> str:
    # The alphabet kube-apiserver's generateName and the pod-template-hash use (no vowels, no 0/1/3).
    return "".join(rng.choices("bcdfghjklmnpqrstvwxz2456789", k=n))


def node(index: int, rng: random.Random) -> Obj:
    """One node as kubelet registers it on a cloud provider (labels, capacity, conditions, addresses, images)."""
    name = f"ip-10-{index // 65536 % 256}-{index // 256 % 256}-{index % 256}.ec2.internal"
    zone = ZONES[index % len(ZONES)]
    instance, cores, memory_gib, max_pods = INSTANCE_TYPES[index % len(INSTANCE_TYPES)]
    capacity = {
        "cpu": str(cores),
        "memory": f"{memory_gib * 1024 * 1024 - 355_000}Ki",
        "pods": str(max_pods),
        "ephemeral-storage": "104845292Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "attachable-volumes-aws-ebs": "25",
    }
    allocatable = {
        **capacity,
        "cpu": f"{cores * 1000 - 90}m",
        "memory": f"{memory_gib * 1024 * 1024 - 1_200_000}Ki",
        "ephemeral-storage": "95551679124",
    }
    pool = f"pool-{index % 4}"
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": instance,
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/region": "us-east-1",
        "failure-domain.beta.kubernetes.io/zone": zone,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance,
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": zone,
        "topology.ebs.csi.aws.com/zone": zone,
        "eks.amazonaws.com/nodegroup": pool,
        "eks.amazonaws.com/capacityType": "ON_DEMAND" if index % 5 else "SPOT",
        "eks.amazonaws.com/nodegroup-image": "ami-0c2b8ca1dad447f8a",
        "k8s.io/cloud-provider-aws": _hex(rng, 32),
    }

    def condition(kind: str, status: str, reason: str, message: str) -> Obj:
        return {
            "type": kind,
            "status": status,
            "lastHeartbeatTime": TIME,
            "lastTransitionTime": TIME,
            "reason": reason,
            "message": message,
        }

    ip = f"10.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": ip,
                "csi.volume.kubernetes.io/nodeid": f'{{"ebs.csi.aws.com":"i-{_hex(rng, 17)}"}}',
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "providerID": f"aws:///{zone}/i-{_hex(rng, 17)}",
            **({"taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]} if index % 4 == 3 else {}),
        },
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "InternalDNS", "address": name},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": _hex(rng, 32),
                "systemUUID": _uid(rng),
                "bootID": _uid(rng),
                "kernelVersion": "6.1.112-124.190.amzn2023.x86_64",
                "osImage": "Amazon Linux 2023.6.20241031",
                "containerRuntimeVersion": "containerd://1.7.23",
                "kubeletVersion": "v1.35.0-eks-a737599",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": [
                {
                    "names": [f"{image.split(':')[0]}@sha256:{_hex(rng, 64)}", image],
                    "sizeBytes": rng.randrange(10**6, 10**9),
                }
                for image in IMAGES
            ],
        },
    }


def pod(index: int, nodes: list[Obj], rng: random.Random, *, bound: bool) -> Obj:
    """One pod of a Deployment: its ReplicaSet as owner, requests, probes, the default tolerations; bound pods
    Running on a node with their status, the rest pending."""
    shape, cpu, memory = SHAPES[index % len(SHAPES)]
    deployment = f"{shape}-{index % 97}"
    namespace = NAMESPACES[index % len(NAMESPACES)]
    template_hash = f"{(index % 97) * 7919 % 10**10:010d}"[:10]
    name = f"{deployment}-{template_hash}-{_suffix(rng, 5)}"
    image = {"web": IMAGES[11], "api": IMAGES[12]}.get(shape, IMAGES[13])
    tolerations = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    if shape == "batch":
        tolerations.append({"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"})
    token_volume = f"kube-api-access-{_suffix(rng, 5)}"
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": f"{deployment}-{template_hash}-",
            "namespace": namespace,
            "labels": {"app": deployment, "app.kubernetes.io/part-of": shape, "pod-template-hash": template_hash},
            "annotations": {"kubectl.kubernetes.io/restartedAt": TIME},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{deployment}-{template_hash}",
                    "uid": _uid(rng),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": shape,
                    "image": image,
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                    "env": [
                        {"name": "LOG_LEVEL", "value": "info"},
                        {
                            "name": "POD_NAME",
                            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                        },
                    ],
                    "resources": {
                        "requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"},
                        "limits": {"memory": f"{memory * 2}Mi"},
                    },
                    "readinessProbe": {
                        "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                        "periodSeconds": 10,
                        "timeoutSeconds": 1,
                        "successThreshold": 1,
                        "failureThreshold": 3,
                    },
                    "volumeMounts": [
                        {
                            "name": token_volume,
                            "readOnly": True,
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        }
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "volumes": [
                {
                    "name": token_volume,
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        ],
                    },
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": tolerations,
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
    }
    if not bound:
        obj["status"] = {"phase": "Pending", "qosClass": "Burstable"}
        return obj
    target = nodes[index % len(nodes)]
    obj["spec"]["nodeName"] = target["metadata"]["name"]
    host_ip = target["status"]["addresses"][0]["address"]
    pod_ip = f"100.{64 + index // 65536 % 64}.{index // 256 % 256}.{index % 256}"
    obj["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": TIME}
            for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": TIME,
        "containerStatuses": [
            {
                "name": shape,
                "state": {"running": {"startedAt": TIME}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": image,
                "imageID": f"{image.split(':')[0]}@sha256:{_hex(rng, 64)}",
                "containerID": f"containerd://{_hex(rng, 64)}",
                "started": True,
            }
        ],
        "qosClass": "Burstable",
    }
    return obj


def generate(nodes: int, pods: int, *, pending: int = 300, seed: int = 20, images: bool = True) -> Cluster:
    """``nodes`` nodes and ``pods`` pods, the last ``pending`` of them not yet bound (at most all of them); without
    ``images`` the nodes list none (to measure what the image summaries cost).

    Pods go round-robin over the nodes: with the shapes above, 10 pods a node use about a third of its CPU, so the
    pending ones fit."""
    rng = random.Random(seed)
    node_objs = [node(i, rng) for i in range(nodes)]
    if not images:
        for obj in node_objs:
            del obj["status"]["images"]
    pending = min(pending, pods)
    pod_objs = [pod(i, node_objs, rng, bound=i < pods - pending) for i in range(pods)]
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in NAMESPACES]
    return Cluster(namespaces, node_objs, pod_objs, pending)
