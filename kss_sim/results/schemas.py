"""Response shapes of the results API (documented in the OpenAPI at /simulator/v1/openapi.json)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class AttemptSummary(BaseModel):
    attempt: int = Field(examples=[2])
    cycle: int = Field(examples=[17])
    profile: str = Field(examples=["default-scheduler"])
    startedAt: float = Field(description="Unix time the cycle started", examples=[1763715600.25])
    durationSeconds: float = Field(examples=[0.0042])
    queuedSeconds: float = Field(description="Time spent in the queue before this attempt", examples=[1.0])
    result: str = Field(description="scheduled, unschedulable or error", examples=["scheduled"])
    boundTo: str | None = Field(examples=["node-c"])
    boundBy: str | None = Field(
        description="score, single-feasible, nominated-node or external (another scheduler bound it)",
        examples=["score"],
    )
    nominatedNode: str | None = Field(examples=[None])
    message: str = Field(examples=["0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."])
    nodes: int = Field(examples=[3])
    feasibleNodes: int = Field(examples=[1])
    rejections: dict[str, dict[str, int]] = Field(
        description="Nodes rejected per plugin and reason, at the plugin where kube-scheduler stopped",
        examples=[
            {"NodeResourcesFit": {"Insufficient cpu": 2}, "TaintToleration": {"node(s) had untolerated taint(s)": 1}}
        ],
    )
    kubeVersion: str | None = Field(
        default=None,
        description="The Kubernetes version the attempt was scheduled at (--kube-version); null for attempts recorded "
        "before kss had one",
        examples=["1.35"],
    )
    scheduledBy: str | None = Field(
        default=None,
        description="Who bound the pod when another scheduler did (the Scheduled Event's reporting controller, "
        "else the pod's schedulerName); null for kss's own attempts",
        examples=[None],
    )
    shadowAgrees: bool | None = Field(
        default=None,
        description="With --shadow: whether kss's own scheduler would have chosen the node another scheduler bound "
        "the pod to (one of its best nodes); null when not judged",
        examples=[None],
    )


class MatrixRow(BaseModel):
    node: str = Field(examples=["node-c"])
    filter: dict[str, str] = Field(examples=[{"NodeResourcesFit": "passed", "TaintToleration": "passed"}])
    stoppedAt: str | None = Field(description="The plugin where kube-scheduler's filter loop stopped", examples=[None])
    unresolvable: list[str] = Field(examples=[[]])
    score: dict[str, int] | None = Field(examples=[{"NodeResourcesFit": 62, "TaintToleration": 0}])
    normalizedScore: dict[str, int] | None = Field(examples=[{"NodeResourcesFit": 62, "TaintToleration": 100}])
    finalScore: dict[str, int] | None = Field(examples=[{"NodeResourcesFit": 62, "TaintToleration": 300}])
    total: int | None = Field(examples=[362])
    selected: bool = Field(description="The node selectHost picked (the one bound, when the pod was)", examples=[True])
    tied: bool = Field(
        default=False,
        description="The node shared the best total with other nodes, among which the winner was drawn",
        examples=[False],
    )


class Matrix(BaseModel):
    page: int
    pageSize: int
    totalRows: int
    sort: str
    rows: list[MatrixRow]


class TopNode(BaseModel):
    node: str
    total: int
    finalScore: dict[str, int]


class AttemptDetail(AttemptSummary):
    pod: str = Field(examples=["default/web"])
    prefilter: dict[str, str] | None
    prefilterStatus: str | None
    prefilterNodes: list[str] | None
    prescore: dict[str, str] | None
    postfilter: dict[str, Any] | None = Field(
        examples=[{"nominatedNode": "node-b", "victims": ["default/low"], "status": "success", "code": "Success"}]
    )
    victims: list[str]
    reserve: dict[str, str] | None
    permit: dict[str, str] | None
    permitTimeout: dict[str, float] | None
    permitWait: dict[str, Any] | None = None
    # A v1.36 PodGroup cycle's attempt: the group, its pods in the order tried, the outcome, message and placement.
    podGroup: dict[str, Any] | None = None
    prebind: dict[str, str] | None
    bind: dict[str, str] | None
    extenders: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Scheduler extenders' calls: Extender(<urlPrefix>) -> verb -> success | error: ... | "
        "ignored error: ... (their verdicts and scores are in the matrix beside the plugins')",
        examples=[{"Extender(http://127.0.0.1:8888/scheduler)": {"filter": "success", "prioritize": "success"}}],
    )
    selected: list[str] | None = Field(
        description="The node selectHost picked, alone (null: no node was selected; empty: a record from before the "
        "pick was kept, whose winner was never bound)",
        examples=[["node-c"]],
    )
    tiedNodes: list[str] | None = Field(
        default=None,
        description="Every node that had the best total, by name: selectHost drew the winner among them "
        "(kube-scheduler's reservoir sampling)",
        examples=[["node-a", "node-c", "node-d"]],
    )
    tiedCount: int = Field(default=0, description="How many nodes had the best total", examples=[3])
    tieBreak: str | None = Field(
        default=None,
        description="How a tie of several nodes was broken: random (kss serve, as kube-scheduler) or name "
        "(kss simulate, reproducible); null without a tie",
        examples=["random"],
    )
    bestTotal: int | None = Field(default=None, description="The best total score", examples=[362])
    filterPlugins: list[str]
    scorePlugins: list[str]
    weights: dict[str, int]
    topNodes: list[TopNode]
    matrix: Matrix
    external: dict[str, Any] | None = Field(
        default=None,
        description="Another scheduler's binding: binder, node, secondsToBind (from creation), events, conditions, "
        "warnings on its result annotations, annotations (the result keys read)",
        examples=[None],
    )
    shadow: dict[str, Any] | None = Field(
        default=None,
        description="With --shadow: kss's own judgement of the pod just before that binding: node (its pick), best "
        "(the nodes with its best total), agrees, result, message, and rows (kss's filter verdicts and scores of the "
        "bound node and of its pick)",
        examples=[None],
    )


class AttemptList(BaseModel):
    pod: str = Field(examples=["default/web"])
    attempts: list[AttemptSummary]


class Cleared(BaseModel):
    deleted: int
