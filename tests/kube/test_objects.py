from kss_sim.kube.objects import metadata_of


def test_metadata_of_is_the_objects_own_metadata() -> None:
    pod = {"metadata": {"name": "a", "labels": {"app": "x"}}}
    assert metadata_of(pod) is pod["metadata"]
    assert metadata_of(pod).get("labels") == {"app": "x"}


def test_metadata_of_an_object_without_metadata_is_empty() -> None:
    assert metadata_of({}) == {}
    assert metadata_of({"metadata": None}) == {}
