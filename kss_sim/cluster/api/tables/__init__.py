"""Server-side ``meta.k8s.io/v1`` Table output: the columns kubectl prints, per group of kinds."""
