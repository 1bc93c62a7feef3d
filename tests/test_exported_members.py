import fedfit


def test_all_exported_members_exist_and_are_public() -> None:
    for name in fedfit.__all__:
        assert hasattr(fedfit, name), name
    public = {n for n in dir(fedfit) if not n.startswith("_") and not isinstance(getattr(fedfit, n), type(fedfit))}
    assert public - {"annotations"} == set(fedfit.__all__)
