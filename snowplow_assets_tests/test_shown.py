from snowplow_assets.shown import shown


def test_the_first_names_then_how_many_more():
    assert shown([]) == ""
    assert shown(["a", "b"]) == "a, b"
    assert shown([str(i) for i in range(12)]) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 2 more"
    assert shown(["a", "b", "c"], limit=2) == "a, b and 1 more"
