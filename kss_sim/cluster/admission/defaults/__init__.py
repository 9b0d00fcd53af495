"""kube-apiserver's defaulting (SetDefaults_*, PrepareForCreate), per group of kinds."""
