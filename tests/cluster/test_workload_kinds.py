"""apps/v1 Deployments, ReplicaSets, StatefulSets, DaemonSets, batch/v1 Jobs, CronJobs and coordination.k8s.io/v1
Leases through the API as kube-apiserver v1.35 serves them: defaults, generated Job selectors, validation (422
and 400 with upstream's paths and words, nothing written), update rules, the status and scale subresources,
generations, tables and canonical quantities."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest

from kss_sim.cluster.admission.cron import CronError, parse_standard
from kss_sim.cluster.admission.quantities import canonical_quantity
from kss_sim.cluster.admission.validation.metadata import LABEL_MSG

APPS = "/apis/apps/v1/namespaces/default"
BATCH = "/apis/batch/v1/namespaces/default"
MERGE = {"content-type": "application/merge-patch+json"}
TABLE = {"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


def template(labels: dict[str, str], restart: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "nginx:1.27", "resources": {"limits": {"cpu": "500m"}}}]
    }
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": labels}, "spec": spec}


def deployment(name: str = "web", **spec: Any) -> dict[str, Any]:
    body = {"selector": {"matchLabels": {"app": name}}, "template": template({"app": name}), **spec}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": body}


def job(name: str = "pi", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"template": template({}, "Never"), **spec}}


async def _rv(client: httpx.AsyncClient) -> str:
    return str((await client.get("/api/v1/namespaces")).json()["metadata"]["resourceVersion"])


async def test_deployment_gets_kube_apiservers_defaults_and_an_empty_status(client: httpx.AsyncClient) -> None:
    sent = deployment()
    sent["status"] = {"replicas": 7}
    r = await client.post(f"{APPS}/deployments", json=sent)
    assert r.status_code == 201, r.text
    d = r.json()
    assert d["metadata"]["generation"] == 1
    spec = d["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (1, 10, 600)
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    pod_spec = spec["template"]["spec"]
    assert (pod_spec["restartPolicy"], pod_spec["dnsPolicy"], pod_spec["schedulerName"]) == (
        "Always",
        "ClusterFirst",
        "default-scheduler",
    )
    assert pod_spec["terminationGracePeriodSeconds"] == 30
    container = pod_spec["containers"][0]
    assert (container["imagePullPolicy"], container["terminationMessagePolicy"]) == ("IfNotPresent", "File")
    # SetDefaults_Pod is a pod's alone: a template keeps its limits without requests and has no enableServiceLinks.
    assert container["resources"] == {"limits": {"cpu": "500m"}}
    assert "enableServiceLinks" not in pod_spec
    assert d["status"] == {}, "the status sent on create is dropped"


async def test_replica_set_stateful_set_and_daemon_set_defaults(client: httpx.AsyncClient) -> None:
    rs = {
        "metadata": {"name": "rs"},
        "spec": {"selector": {"matchLabels": {"a": "rs"}}, "template": template({"a": "rs"})},
    }
    r = await client.post(f"{APPS}/replicasets", json=rs)
    assert r.status_code == 201, r.text
    assert (r.json()["spec"]["replicas"], r.json()["status"]) == (1, {"replicas": 0})

    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1024Mi"}}},
    }
    sts = {
        "metadata": {"name": "db"},
        "spec": {
            "selector": {"matchLabels": {"a": "db"}},
            "template": template({"a": "db"}),
            "volumeClaimTemplates": [claim],
        },
    }
    r = await client.post(f"{APPS}/statefulsets", json=sts)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert (spec["replicas"], spec["podManagementPolicy"], spec["revisionHistoryLimit"]) == (1, "OrderedReady", 10)
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    vct = spec["volumeClaimTemplates"][0]
    assert (vct["apiVersion"], vct["kind"], vct["spec"]["volumeMode"], vct["status"]) == (
        "v1",
        "PersistentVolumeClaim",
        "Filesystem",
        {"phase": "Pending"},
    )
    assert vct["spec"]["resources"]["requests"]["storage"] == "1Gi", "quantities are stored canonical"
    assert r.json()["status"] == {"replicas": 0, "availableReplicas": 0}

    ds = {
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"a": "ds"}}, "template": template({"a": "ds"})},
    }
    r = await client.post(f"{APPS}/daemonsets", json=ds)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert r.json()["status"] == {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }


async def test_job_gets_a_generated_selector_and_template_labels_naming_its_uid(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{BATCH}/jobs", json=job())
    assert r.status_code == 201, r.text
    j = r.json()
    uid = j["metadata"]["uid"]
    spec = j["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    expected = {
        "job-name": "pi",
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid,
        "batch.kubernetes.io/controller-uid": uid,
    }
    assert spec["template"]["metadata"]["labels"] == expected
    assert j["metadata"]["labels"] == expected, "SetDefaults_Job copies the template's labels to the Job"
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"], spec["completionMode"]) == (
        1,
        1,
        6,
        "NonIndexed",
    )
    assert (spec["suspend"], spec["manualSelector"], spec["podReplacementPolicy"]) == (
        False,
        False,
        "TerminatingOrFailed",
    )

    manual = job("manual", manualSelector=True, selector={"matchLabels": {"run": "m"}})
    manual["spec"]["template"]["metadata"]["labels"] = {"run": "m"}
    r = await client.post(f"{BATCH}/jobs", json=manual)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["selector"] == {"matchLabels": {"run": "m"}}
    assert r.json()["spec"]["template"]["metadata"]["labels"] == {"run": "m"}


async def test_cron_job_defaults_and_its_job_template(client: httpx.AsyncClient) -> None:
    body = {
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template({}, "OnFailure")}}},
    }
    r = await client.post(f"{BATCH}/cronjobs", json=body)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert (
        spec["concurrencyPolicy"],
        spec["suspend"],
        spec["successfulJobsHistoryLimit"],
        spec["failedJobsHistoryLimit"],
    ) == (
        "Allow",
        False,
        3,
        1,
    )
    job_spec = spec["jobTemplate"]["spec"]
    assert (job_spec["backoffLimit"], job_spec["completionMode"]) == (6, "NonIndexed")
    assert "selector" not in job_spec, "a CronJob's Jobs get their selectors when created"


BAD: list[tuple[str, str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        "no selector, negative replicas",
        "deployments",
        {"metadata": {"name": "d"}, "spec": {"replicas": -1, "template": template({"app": "d"})}},
        [
            ("spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
            ("spec.selector", "Required value"),
        ],
    ),
    (
        "selector does not match the template",
        "deployments",
        deployment("d", selector={"matchLabels": {"app": "other"}}),
        [
            (
                "spec.template.metadata.labels",
                'Invalid value: map[string]string{"app":"d"}: `selector` does not match template `labels`',
            )
        ],
    ),
    (
        "pod template checked as a pod",
        "deployments",
        {
            **deployment("d"),
            "spec": {
                **deployment("d")["spec"],
                "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c"}]}},
            },
        },
        [("spec.template.spec.containers[0].image", "Required value")],
    ),
    (
        "a deployment's pods always restart",
        "deployments",
        {**deployment("d"), "spec": {**deployment("d")["spec"], "template": template({"app": "d"}, "Never")}},
        [("spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"')],
    ),
    (
        "surge and unavailability both zero",
        "deployments",
        deployment("d", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
        [("spec.strategy.rollingUpdate.maxUnavailable", "Invalid value: 0: may not be 0 when `maxSurge` is 0")],
    ),
    (
        "empty selector",
        "replicasets",
        {"metadata": {"name": "r"}, "spec": {"selector": {}, "template": template({"a": "r"})}},
        [
            (
                "spec.selector",
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
                "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment",
            )
        ],
    ),
    (
        "a stateful set's name is a DNS label",
        "statefulsets",
        {
            "metadata": {"name": "db.v1"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template({"a": "b"})},
        },
        [
            (
                "metadata.name",
                f'Invalid value: "db.v1": {LABEL_MSG}',
            )
        ],
    ),
]


@pytest.mark.parametrize(("case", "plural", "body", "causes"), BAD, ids=[b[0] for b in BAD])
async def test_invalid_apps_objects_are_refused_with_upstreams_field_errors(
    client: httpx.AsyncClient, case: str, plural: str, body: dict[str, Any], causes: list[tuple[str, str]]
) -> None:
    rv = await _rv(client)
    r = await client.post(f"{APPS}/{plural}", json=body)
    assert r.status_code == 422, r.text
    status = r.json()
    assert status["reason"] == "Invalid"
    assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == causes
    assert status["message"].startswith(f'{status["details"]["kind"]}.apps "{body["metadata"]["name"]}" is invalid: ')
    assert await _rv(client) == rv, "nothing was written"


async def test_invalid_batch_objects_and_leases_are_refused(client: httpx.AsyncClient) -> None:
    rv = await _rv(client)
    r = await client.post(f"{BATCH}/jobs", json={"metadata": {"name": "j"}, "spec": {"template": template({})}})
    assert r.status_code == 422
    assert r.json()["message"] == (
        'Job.batch "j" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
    )
    cron = {
        "metadata": {"name": "c"},
        "spec": {"schedule": "61 * * * *", "jobTemplate": {"spec": {"template": template({}, "Never")}}},
    }
    r = await client.post(f"{BATCH}/cronjobs", json=cron)
    assert r.status_code == 422
    assert r.json()["message"] == (
        'CronJob.batch "c" is invalid: spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum '
        "(59): 61"
    )
    cron["spec"]["schedule"] = "TZ=UTC 0 * * * *"
    r = await client.post(f"{BATCH}/cronjobs", json=cron)
    assert r.json()["details"]["causes"][0]["message"].endswith(
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    )
    lease = {"metadata": {"name": "n1"}, "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 0}}
    r = await client.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", json=lease)
    assert r.status_code == 422
    assert r.json()["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0: must be greater than 0",
            "field": "spec.leaseDurationSeconds",
        }
    ]
    assert await _rv(client) == rv


async def test_a_jobs_pod_failure_policy_is_validated_as_kube_apiserver_does(client: httpx.AsyncClient) -> None:
    rules: list[dict[str, Any]] = [
        {"action": "FailJob", "onExitCodes": {"containerName": "app", "operator": "In", "values": [1, 42]}},
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
    ]
    r = await client.post(f"{BATCH}/jobs", json=job("ok", podFailurePolicy={"rules": rules}))
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["podFailurePolicy"]["rules"][1]["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}
    ]
    assert r.json()["spec"]["podReplacementPolicy"] == "Failed"

    rv = await _rv(client)
    rules = [
        {"action": "Retry", "onExitCodes": {"containerName": "other", "operator": "Equals", "values": [3, 0, 3]}},
        {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": []}},
        {"action": "Count", "onPodConditions": [{"type": "bad type!", "status": "Maybe"}]},
        {"action": "Ignore"},
        {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1]},
         "onPodConditions": [{"type": "DisruptionTarget"}]},
    ]  # fmt: skip
    r = await client.post(f"{BATCH}/jobs", json=job("bad", podFailurePolicy={"rules": rules}))
    assert r.status_code == 422, r.text
    rule = "spec.podFailurePolicy.rules"
    assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
        (f"{rule}[0].action",
         'Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore"'),
        (f"{rule}[0].onExitCodes.operator", 'Unsupported value: "Equals": supported values: "In", "NotIn"'),
        (f"{rule}[0].onExitCodes.containerName",
         'Invalid value: "other": must be one of the container or initContainer names in the pod template'),
        (f"{rule}[0].onExitCodes.values[2]", "Duplicate value: 3"),
        (f"{rule}[0].onExitCodes.values", "Invalid value: [3,0,3]: must be ordered"),
        (f"{rule}[1].action", 'Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set'),
        (f"{rule}[1].onExitCodes.values", "Invalid value: []: at least one value is required"),
        (f"{rule}[2].onPodConditions[0].type",
         "Invalid value: \"bad type!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must "
         "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
         "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        (f"{rule}[2].onPodConditions[0].status",
         'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
        (f"{rule}[3]", "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"),
        (f"{rule}[4]", "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"),
    ]  # fmt: skip
    assert await _rv(client) == rv, "nothing was written"


async def test_wrong_types_are_decoding_errors(client: httpx.AsyncClient) -> None:
    rv = await _rv(client)
    r = await client.post(f"{APPS}/deployments", json=deployment(replicas="three"))
    assert r.status_code == 400
    assert r.json()["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct '
        "field DeploymentSpec.spec.replicas of type int32"
    )
    bad = deployment()
    bad["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    r = await client.post(f"{APPS}/deployments", json=bad)
    assert r.status_code == 400
    assert r.json()["message"].startswith(
        'Deployment in version "v1" cannot be handled as a Deployment: quantities must match'
    )
    r = await client.post(f"{BATCH}/jobs", json=job(suspend="yes"))
    assert r.status_code == 400
    assert "Go struct field JobSpec.spec.suspend of type bool" in r.json()["message"]
    assert await _rv(client) == rv


async def test_update_rules_selector_and_job_immutability(client: httpx.AsyncClient) -> None:
    assert (await client.post(f"{APPS}/deployments", json=deployment())).status_code == 201
    patch = {"spec": {"selector": {"matchLabels": {"app": "v2"}}, "template": {"metadata": {"labels": {"app": "v2"}}}}}
    r = await client.patch(f"{APPS}/deployments/web", content=json.dumps(patch), headers=MERGE)
    assert r.status_code == 422
    assert r.json()["details"]["causes"][0] == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"v2"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
        "field": "spec.selector",
    }
    assert (await client.post(f"{BATCH}/jobs", json=job())).status_code == 201
    r = await client.patch(f"{BATCH}/jobs/pi", content=b'{"spec":{"completions":3}}', headers=MERGE)
    assert r.status_code == 422
    assert r.json()["message"] == 'Job.batch "pi" is invalid: spec.completions: Invalid value: 3: field is immutable'
    image = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "other"}]}}}}
    r = await client.patch(
        f"{BATCH}/jobs/pi",
        content=json.dumps(image),
        headers={"content-type": "application/strategic-merge-patch+json"},
    )
    assert r.status_code == 422
    assert [c["field"] for c in r.json()["details"]["causes"]] == ["spec.template"]
    r = await client.patch(f"{BATCH}/jobs/pi", content=b'{"spec":{"parallelism":3}}', headers=MERGE)
    assert r.status_code == 200, "parallelism may change"

    sts = {
        "metadata": {"name": "db"},
        "spec": {"selector": {"matchLabels": {"a": "db"}}, "template": template({"a": "db"}), "serviceName": "db"},
    }
    assert (await client.post(f"{APPS}/statefulsets", json=sts)).status_code == 201
    r = await client.patch(f"{APPS}/statefulsets/db", content=b'{"spec":{"serviceName":"other"}}', headers=MERGE)
    assert r.status_code == 422
    assert r.json()["details"]["causes"][0]["message"] == (
        "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
    )
    r = await client.patch(f"{APPS}/statefulsets/db", content=b'{"spec":{"replicas":4}}', headers=MERGE)
    assert r.status_code == 200


async def test_status_subresource_and_generation(client: httpx.AsyncClient) -> None:
    created = (await client.post(f"{APPS}/deployments", json=deployment())).json()
    status = {"status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 1}}
    r = await client.patch(
        f"{APPS}/deployments/web/status", content=json.dumps({**status, "spec": {"replicas": 9}}), headers=MERGE
    )
    assert r.status_code == 200, r.text
    after = r.json()
    assert after["status"] == status["status"]
    assert after["spec"]["replicas"] == 1, "the status subresource changes only the status"
    assert after["metadata"]["generation"] == 1

    r = await client.patch(
        f"{APPS}/deployments/web", content=b'{"spec":{"replicas":2},"status":{"replicas":0}}', headers=MERGE
    )
    assert r.json()["status"] == status["status"], "the main resource keeps the status"
    assert r.json()["metadata"]["generation"] == 2
    r = await client.patch(
        f"{APPS}/deployments/web", content=b'{"metadata":{"annotations":{"note":"x"}}}', headers=MERGE
    )
    assert r.json()["metadata"]["generation"] == 3, "a Deployment's annotations are part of its generation"
    r = await client.patch(f"{APPS}/deployments/web", content=b'{"metadata":{"labels":{"tier":"web"}}}', headers=MERGE)
    assert r.json()["metadata"]["generation"] == 3

    bad = {"status": {"replicas": 1, "readyReplicas": 2}}
    r = await client.patch(f"{APPS}/deployments/web/status", content=json.dumps(bad), headers=MERGE)
    assert r.status_code == 422
    assert r.json()["details"]["causes"][0] == {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: 2: cannot be greater than status.replicas",
        "field": "status.readyReplicas",
    }
    assert r.json()["details"]["name"] == created["metadata"]["name"]


async def test_scale_subresource_reads_and_writes_spec_replicas(client: httpx.AsyncClient) -> None:
    d = deployment(
        selector={
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["b", "a"]}],
        }
    )
    assert (await client.post(f"{APPS}/deployments", json=d)).status_code == 201
    scale = (await client.get(f"{APPS}/deployments/web/scale")).json()
    assert (scale["kind"], scale["apiVersion"], scale["spec"], scale["status"]) == (
        "Scale",
        "autoscaling/v1",
        {"replicas": 1},
        {"replicas": 0, "selector": "app=web,tier notin (a,b)"},
    )
    put = copy.deepcopy(scale)
    put["spec"]["replicas"] = 3
    r = await client.put(f"{APPS}/deployments/web/scale", json=put)
    assert r.status_code == 200, r.text
    assert r.json()["spec"] == {"replicas": 3}
    assert (await client.get(f"{APPS}/deployments/web")).json()["spec"]["replicas"] == 3
    r = await client.put(f"{APPS}/deployments/web/scale", json=put)
    assert r.status_code == 409, "the Scale's resourceVersion is a precondition"
    r = await client.patch(f"{APPS}/deployments/web/scale", content=b'{"spec":{"replicas":0}}', headers=MERGE)
    assert r.json()["spec"] == {}, "zero replicas is omitted, as Go renders it"
    rv = await _rv(client)
    r = await client.patch(f"{APPS}/deployments/web/scale", content=b'{"spec":{"replicas":-2}}', headers=MERGE)
    assert r.status_code == 422
    assert (
        r.json()["message"]
        == 'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0'
    )
    assert await _rv(client) == rv
    assert (await client.get(f"{APPS}/daemonsets/web/scale")).status_code == 404

    resources = {r["name"]: r for r in (await client.get("/apis/apps/v1")).json()["resources"]}
    assert resources["deployments/scale"] == {
        "name": "deployments/scale",
        "singularName": "",
        "namespaced": True,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": ["get", "patch", "update"],
    }
    assert "statefulsets/scale" in resources and "daemonsets/scale" not in resources


async def test_tables_have_kube_apiservers_columns(client: httpx.AsyncClient) -> None:
    assert (await client.post(f"{APPS}/deployments", json=deployment())).status_code == 201
    table = (await client.get(f"{APPS}/deployments", headers=TABLE)).json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector",
    ]  # fmt: skip
    assert table["rows"][0]["cells"][:4] == ["web", "0/1", 0, 0]
    assert table["rows"][0]["cells"][5:] == ["app", "nginx:1.27", "app=web"]
    assert (await client.post(f"{BATCH}/jobs", json=job())).status_code == 201
    cells = (await client.get(f"{BATCH}/jobs", headers=TABLE)).json()["rows"][0]["cells"]
    assert cells[:4] == ["pi", "Running", "0/1", ""]
    lease = {"metadata": {"name": "n1"}, "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40}}
    r = await client.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", json=lease)
    assert r.status_code == 201
    cells = (await client.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", headers=TABLE)).json()
    assert [c["name"] for c in cells["columnDefinitions"]] == ["Name", "Holder", "Age"]
    assert cells["rows"][0]["cells"][:2] == ["n1", "n1"]


async def test_node_pv_and_claim_quantities_are_stored_canonical(client: httpx.AsyncClient) -> None:
    node = {"metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "64000m", "memory": "1048576Ki", "pods": 110}}}
    r = await client.post("/api/v1/nodes", json=node)
    assert r.status_code == 201
    assert r.json()["status"]["capacity"] == {"cpu": "64", "memory": "1Gi", "pods": "110"}
    assert r.json()["status"]["allocatable"] == {"cpu": "64", "memory": "1Gi", "pods": "110"}
    pv = {
        "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "1000M"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}},
    }
    assert (await client.post("/api/v1/persistentvolumes", json=pv)).json()["spec"]["capacity"] == {"storage": "1G"}
    pvc = {
        "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "0.5Gi"}}},
    }
    r = await client.post("/api/v1/namespaces/default/persistentvolumeclaims", json=pvc)
    assert r.json()["spec"]["resources"]["requests"] == {"storage": "512Mi"}
    rc = {"metadata": {"name": "rc"}, "spec": {"selector": {"app": "rc"}, "template": template({"app": "rc"})}}
    rc["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "0.5", "memory": "1024Mi"}}
    r = await client.post("/api/v1/namespaces/default/replicationcontrollers", json=rc)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "500m",
        "memory": "1Gi",
    }


@pytest.mark.parametrize(
    ("given", "canonical"),
    [("64000m", "64"), ("1024Ki", "1Mi"), ("1536Ki", "1536Ki"), ("0.5", "500m"), ("1000", "1k"), ("1.5Gi", "1536Mi"),
     ("512", "512"), ("1e3", "1e3"), ("100m", "100m"), ("0.0000000001", "1n"), ("2048", "2048"), ("0", "0")],
)  # fmt: skip
def test_canonical_quantity_matches_quantity_string(given: str, canonical: str) -> None:
    assert canonical_quantity(given) == canonical


@pytest.mark.parametrize(
    ("schedule", "error"),
    [
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
        ("@every soon", 'failed to parse duration @every soon: time: invalid duration "soon"'),
    ],
)
def test_cron_schedules_are_parsed_as_robfig_cron(schedule: str, error: str) -> None:
    with pytest.raises(CronError) as info:
        parse_standard(schedule)
    assert str(info.value) == error


def test_cron_next_activation() -> None:
    from datetime import datetime

    assert parse_standard("*/15 9-17 * * MON-FRI").next_after(datetime(2026, 1, 2, 17, 50)) == datetime(
        2026, 1, 5, 9, 0
    )
    assert parse_standard("@monthly").next_after(datetime(2026, 1, 31, 12, 0)) == datetime(2026, 2, 1, 0, 0)
