"""The id-cursor pagination that the node's and the edge's Anthropic model listings share."""

from __future__ import annotations

import json

import pytest

from b3os_infer.edge.fleet.forward import listing
from b3os_infer.edge.fleet.nodes import NodePool
from b3os_infer.errors import InvalidRequest
from b3os_infer.http.formats import BASE
from b3os_infer.pagination import page_by_id

ITEMS = [{"id": f"m{i}"} for i in range(5)]


def ids(page: dict[str, object]) -> list[str]:
    data = page["data"]
    assert isinstance(data, list)
    return [item["id"] for item in data]


def test_without_a_query_the_first_twenty_and_no_more():
    many = [{"id": f"m{i:02d}"} for i in range(25)]
    page = page_by_id(many, {})
    assert ids(page) == [f"m{i:02d}" for i in range(20)]
    assert page["has_more"] is True
    assert (page["first_id"], page["last_id"]) == ("m00", "m19")


def test_after_id_pages_forward_until_has_more_is_false():
    first = page_by_id(ITEMS, {"limit": "2"})
    second = page_by_id(ITEMS, {"limit": "2", "after_id": first["last_id"]})
    third = page_by_id(ITEMS, {"limit": "2", "after_id": second["last_id"]})
    assert [ids(first), ids(second), ids(third)] == [["m0", "m1"], ["m2", "m3"], ["m4"]]
    assert [first["has_more"], second["has_more"], third["has_more"]] == [True, True, False]


def test_before_id_pages_backward_until_has_more_is_false():
    first = page_by_id(ITEMS, {"limit": "2", "before_id": "m4"})
    second = page_by_id(ITEMS, {"limit": "2", "before_id": first["first_id"]})
    third = page_by_id(ITEMS, {"limit": "2", "before_id": second["first_id"]})
    assert [ids(first), ids(second), ids(third)] == [["m2", "m3"], ["m0", "m1"], []]
    assert [first["has_more"], second["has_more"], third["has_more"]] == [True, False, False]


def test_after_and_before_together_bound_both_ends():
    page = page_by_id(ITEMS, {"after_id": "m0", "before_id": "m4"})
    assert ids(page) == ["m1", "m2", "m3"] and page["has_more"] is False
    narrow = page_by_id(ITEMS, {"limit": "2", "after_id": "m0", "before_id": "m4"})
    assert ids(narrow) == ["m2", "m3"] and narrow["has_more"] is True   # m1 is before it


def test_an_unknown_cursor_is_an_empty_page_with_null_ids():
    for query in ({"after_id": "nope"}, {"before_id": "nope"}):
        page = page_by_id(ITEMS, query)
        assert page == {"data": [], "has_more": False, "first_id": None, "last_id": None}


def test_the_last_item_as_after_id_is_an_empty_page():
    assert page_by_id(ITEMS, {"after_id": "m4"})["data"] == []


@pytest.mark.parametrize(("limit", "message"), [
    ("abc", "limit: Input should be a valid integer"),
    ("", "limit: Input should be a valid integer"),
    ("1_0", "limit: Input should be a valid integer"),
    ("2.5", "limit: Input should be a valid integer"),
    ("0", "limit: Input should be greater than or equal to 1"),
    ("-3", "limit: Input should be greater than or equal to 1"),
    ("1001", "limit: Input should be less than or equal to 1000"),
])
def test_a_bad_limit_is_an_invalid_request_on_param_limit(limit, message):
    with pytest.raises(InvalidRequest) as refused:
        page_by_id(ITEMS, {"limit": limit})
    assert (refused.value.message, refused.value.param, refused.value.status) == (
        message, "limit", 400)


def test_the_limits_bounds_are_accepted():
    assert ids(page_by_id(ITEMS, {"limit": "1"})) == ["m0"]
    assert ids(page_by_id(ITEMS, {"limit": " 1000 "})) == [item["id"] for item in ITEMS]


def _pool_of(*listings: list[str]) -> NodePool:
    pool = NodePool([f"http://node{i}" for i in range(len(listings))], "secret")
    for node, names in zip(pool.nodes, listings, strict=True):
        node.up = True
        node.anthropic_models = {name: {"type": "model", "id": name} for name in names}
    return pool


def _edge_page(pool: NodePool, query: bytes) -> dict[str, object]:
    scope = {"path": BASE + "/v1/models", "query_string": query, "state": {}}
    page = json.loads(listing(pool, scope).body)
    assert isinstance(page, dict)
    return page


def test_the_edge_pages_the_union_of_its_nodes_listings_with_the_same_rules():
    pool = _pool_of(["m0", "m1"], ["m1", "m2", "m3"])
    first = _edge_page(pool, b"limit=2")
    rest = _edge_page(pool, b"limit=2&after_id=" + str(first["last_id"]).encode())
    assert (ids(first), first["has_more"]) == (["m0", "m1"], True)
    assert (ids(rest), rest["has_more"]) == (["m2", "m3"], False)


def test_the_edge_refuses_a_blank_limit_as_the_node_does():
    with pytest.raises(InvalidRequest, match="valid integer") as refused:
        _edge_page(_pool_of(["m0"]), b"limit=")
    assert refused.value.param == "limit"
