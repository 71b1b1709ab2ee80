"""Placement: rendezvous hashing over the healthy nodes, with a fallback on load."""

from __future__ import annotations

from b3os_infer.config import load_config
from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.build import edge_state
from b3os_infer.edge.fleet.affinity import RoutingKey
from b3os_infer.edge.fleet.node_choice import Balance, place
from b3os_infer.edge.fleet.nodes import Node, NodePool, reported_load
from b3os_infer.edge.storage.db import open_database

MODEL = "b3os/fake"
URLS = ["http://10.0.0.5:8001", "http://10.0.0.6:8001", "http://10.0.0.7:8001"]
KEYS = [RoutingKey("session", f"session-{n}") for n in range(300)]


def _pool(urls: list[str] = URLS) -> NodePool:
    pool = NodePool(urls, "secret" * 4)
    for node in pool.nodes:
        node.up, node.openai_models = True, {MODEL: {"id": MODEL}}
    return pool


def _home(pool: NodePool, key: RoutingKey) -> str:
    nodes = pool.serving(MODEL)
    return place(key, nodes, lambda n: n.load(MODEL), Balance(), 0).nodes[0].url


def test_two_independent_pools_place_every_key_on_the_same_node():
    first, second = _pool(), _pool(list(reversed(URLS)))
    assert [_home(first, k) for k in KEYS] == [_home(second, k) for k in KEYS]


def test_keys_spread_over_the_nodes():
    homes = [_home(_pool(), k) for k in KEYS]
    assert all(60 <= homes.count(url) <= 140 for url in URLS)


def test_removing_one_of_three_nodes_moves_only_the_keys_that_were_on_it():
    pool = _pool()
    before = {k: _home(pool, k) for k in KEYS}
    pool.nodes[1].up = False
    after = {k: _home(pool, k) for k in KEYS}
    moved = {k for k in KEYS if before[k] != after[k]}
    assert moved == {k for k in KEYS if before[k] == URLS[1]} and moved
    pool.nodes[1].up = True   # and back: every key returns home
    assert {k: _home(pool, k) for k in KEYS} == before


def test_a_node_that_joins_takes_keys_only_from_the_others_never_moves_them_between_them():
    small, large = _pool(URLS[:2]), _pool(URLS)
    for key in KEYS:
        assert _home(large, key) in (_home(small, key), URLS[2])


def test_a_busy_preferred_node_sends_the_request_to_the_least_loaded_one():
    pool = _pool()
    key = KEYS[0]
    home = _home(pool, key)
    busy = next(n for n in pool.nodes if n.url == home)
    others = [n for n in pool.nodes if n is not busy]
    busy.reported = {MODEL: 12}
    others[0].reported, others[1].reported = {MODEL: 3}, {MODEL: 1}
    placement = place(key, pool.serving(MODEL), lambda n: n.load(MODEL), Balance(8, 1.5), 0)
    assert placement.decision == "fallback"
    assert placement.nodes[0] is others[1]
    assert sorted(n.url for n in placement.nodes) == sorted(URLS)


def test_a_preferred_node_under_the_thresholds_keeps_its_session():
    pool = _pool()
    key = KEYS[0]
    home = next(n for n in pool.nodes if n.url == _home(pool, key))
    home.reported = {MODEL: 8}      # 8 more than the idle nodes: not more than 8
    placement = place(key, pool.serving(MODEL), lambda n: n.load(MODEL), Balance(8, 1.5), 0)
    assert (placement.decision, placement.nodes[0]) == ("affine", home)
    home.reported = {MODEL: 20}
    for node in pool.nodes:          # everyone equally busy: relative test holds it home
        node.reported = {MODEL: 20} if node is not home else {MODEL: 29}
    placement = place(key, pool.serving(MODEL), lambda n: n.load(MODEL), Balance(8, 1.5), 0)
    assert (placement.decision, placement.nodes[0]) == ("affine", home)


def test_the_edges_own_requests_in_flight_count_as_load_between_health_checks():
    node = Node("http://a", reported={MODEL: 2})
    for _ in range(5):
        node.started(MODEL)
    assert node.load(MODEL) == 5
    for _ in range(5):
        node.finished(MODEL)
    assert node.load(MODEL) == 2


def test_requests_without_a_key_go_to_the_least_loaded_node_taking_turns_on_ties():
    pool = _pool()
    pool.nodes[0].reported = {MODEL: 3}
    firsts = [place(None, pool.serving(MODEL), lambda n: n.load(MODEL), Balance(), turn)
              for turn in range(4)]
    assert {p.decision for p in firsts} == {"no_key"}
    assert [p.nodes[0].url for p in firsts] == [URLS[1], URLS[1], URLS[2], URLS[1]]
    assert all(p.nodes[-1].url == URLS[0] for p in firsts)


def test_a_nodes_health_answer_gives_each_models_running_and_waiting_requests():
    health = {"status": "ok", "models": {MODEL: {"healthy": True, "active": 2, "waiting": 3},
                                         "embed": {"healthy": True}}}
    assert reported_load(health) == {MODEL: 5, "embed": 0}
    assert reported_load({"status": "ok"}) == {} and reported_load([]) == {}


def test_the_balance_thresholds_come_from_the_edge_table(tmp_path):
    path = tmp_path / "edge.toml"
    path.write_text("[edge]\nbalance_abs_threshold = 2\nbalance_rel_threshold = 3.0\n")
    keys = KeyStore(open_database(f"sqlite:///{tmp_path / 'keys.sqlite3'}"))
    configured, default = edge_state(load_config(path), keys), edge_state(load_config(None), keys)
    try:
        assert configured.balance == Balance(2, 3.0) and default.balance == Balance(8, 1.5)
        assert configured.balance.busy(preferred=10, least=3)
        assert not configured.balance.busy(preferred=9, least=3)   # 9 is not over 3 x 3
    finally:
        configured.ledger.close()
        default.ledger.close()
