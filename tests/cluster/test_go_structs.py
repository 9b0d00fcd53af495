"""tools/go_structs reads what decoding needs from a release's Go sources: each JSON field's Go type as reflect names
it (named types, pointers left out, aliases resolved, inlined structs flattened) and its tag's options."""

from __future__ import annotations

from pathlib import Path

from tools.go_structs import GoField, GoSources, api_minor

CORE = """package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Taint is a taint.
type Taint struct {
	// The key.
	Key string `json:"key" protobuf:"bytes,1,opt,name=key"`
	Effect TaintEffect `json:"effect" protobuf:"bytes,3,opt,name=effect,casttype=TaintEffect"`
	// +optional
	TimeAdded *metav1.Time `json:"timeAdded,omitempty" protobuf:"bytes,4,opt,name=timeAdded"`
	Limits ResourceList `json:"limits,omitempty"`
	Add []Capability `json:"add,omitempty"`
	Policy PolicyType `json:"policy,omitempty"`
	Data map[string][]byte `json:"data,omitempty"`
	Ignored string `json:"-"`
	Handler `json:",inline"`
}

type Handler struct {
	Exec *string `json:"exec,omitempty"`
}

type TaintEffect string
type Capability string
type Policy string
type PolicyType = Policy
type ResourceList map[ResourceName]resource.Quantity
"""
META = """package v1

type ObjectMeta struct {
	CreationTimestamp Time `json:"creationTimestamp,omitempty,omitzero"`
}

type Time struct {
	time.Time `protobuf:"-"`
}
"""


def _tree(tmp_path: Path) -> Path:
    vendor = tmp_path / "vendor"
    (vendor / "k8s.io/api/core/v1").mkdir(parents=True)
    (vendor / "k8s.io/apimachinery/pkg/apis/meta/v1").mkdir(parents=True)
    (vendor / "k8s.io/api/core/v1/types.go").write_text(CORE)
    (vendor / "k8s.io/apimachinery/pkg/apis/meta/v1/types.go").write_text(META)
    (vendor / "modules.txt").write_text("# k8s.io/api v0.34.7\n## explicit; go 1.24.0\n")
    return vendor


def test_fields_are_named_as_reflect_names_their_types(tmp_path: Path) -> None:
    vendor = _tree(tmp_path)
    assert api_minor(vendor) == 34
    fields = GoSources(vendor).fields("k8s.io/api/core/v1", "Taint")
    assert fields is not None
    assert {name: field.go_type for name, field in fields.items()} == {
        "key": "string",
        "effect": "v1.TaintEffect",
        "timeAdded": "v1.Time",  # the decoder fills the pointer's element
        "limits": "v1.ResourceList",
        "add": "[]v1.Capability",
        "policy": "v1.Policy",  # an alias is the type it names
        "data": "map[string][]uint8",
        "exec": "string",  # an inlined struct's fields are the struct's own
    }
    assert fields["timeAdded"] == GoField("v1.Time", pointer=True, omitempty=True, omitzero=False, kind="struct")
    assert fields["limits"].kind == "map" and fields["add"].kind == "slice" and fields["effect"].kind == "scalar"
    meta = GoSources(vendor).fields("k8s.io/apimachinery/pkg/apis/meta/v1", "ObjectMeta")
    assert meta is not None and meta["creationTimestamp"].omitzero and meta["creationTimestamp"].omitempty
    assert GoSources(vendor).fields("k8s.io/api/apps/v1", "Deployment") is None
