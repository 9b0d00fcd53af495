"""kube-apiserver's validation, per group of kinds; ``core`` holds the shared rules and the tables the others fill."""
