"""Both cluster classes satisfy the lab protocol (lab/protocol.py), checked without a server:
the classes are inspected, and objects are only constructed (ports chosen, nothing started)."""

import inspect

import pytest

from lab.protocol import LAB_MEMBERS, NODE_MEMBERS, Lab, LabNode
from lab.patroni import Member, PatroniCluster
from lab.redis import Instance, RedisSentinelCluster

CLUSTERS = [PatroniCluster, RedisSentinelCluster]


def test_the_member_lists_name_every_protocol_member():
    declared = {n for n in vars(Lab) if not n.startswith("_")} | set(Lab.__annotations__)
    assert set(LAB_MEMBERS) == declared
    assert set(NODE_MEMBERS) == set(LabNode.__annotations__)


@pytest.mark.parametrize("cls", CLUSTERS, ids=lambda c: c.__name__)
def test_cluster_class_provides_every_protocol_method(cls):
    for name in LAB_MEMBERS:
        if name in Lab.__annotations__:
            continue  # an attribute set by __init__: checked on an object below
        assert callable(getattr(cls, name, None)), f"{cls.__name__} lacks {name}()"
        # Every argument the protocol passes positionally is accepted.
        wanted = [p for p in inspect.signature(getattr(Lab, name)).parameters if p != "self"]
        got = inspect.signature(getattr(cls, name)).parameters
        assert len(got) - 1 >= len(wanted), f"{cls.__name__}.{name}{inspect.signature(getattr(cls, name))}"


@pytest.mark.parametrize("cls", CLUSTERS, ids=lambda c: c.__name__)
def test_unstarted_cluster_is_a_lab(cls, tmp_path):
    lab = cls(tmp_path / "lab")
    assert isinstance(lab, Lab)
    assert lab.workdir == tmp_path / "lab"
    assert lab.nodes(), f"{cls.__name__} has no data nodes"
    for node in lab.nodes():
        assert isinstance(node, LabNode)
        assert node.addr == f"127.0.0.1:{node.port}"
        assert lab.node(node.name) is node and lab.node(node) is node
    # With the primary given, the replicas are the other nodes (no server asked).
    first, *rest = lab.nodes()
    assert lab.replicas(first) == rest


@pytest.mark.parametrize("node_cls", [Member, Instance], ids=lambda c: c.__name__)
def test_node_class_provides_every_node_member(node_cls):
    for name in NODE_MEMBERS:
        assert hasattr(node_cls, name) or name in node_cls.__dataclass_fields__, f"{node_cls.__name__}.{name}"
