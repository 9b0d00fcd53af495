"""CustomResourceDefinitions: the CRD kind's rules and status (``definition``), the kinds established CRDs serve
(``kinds``), their schemas at work (``schema``), what a custom object's write goes through (``objects``) and
their printer columns (``columns``)."""
