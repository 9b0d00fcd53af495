"""The CEL extension libraries Kubernetes' base environment loads (``k8s.io/apiserver/pkg/cel/environment``), as
cel-expr-python's environment configuration: DRA's selectors and a CRD's ``x-kubernetes-validations`` both compile
against them. A module of its own so that reading it does not load the CEL runtime."""

from __future__ import annotations

EXTENSIONS = """
extensions:
  - name: "bindings"
  - name: "lists"
  - name: "optional"
  - name: "sets"
  - name: "strings"
    version: 2
  - name: "two-var-comprehensions"
"""
