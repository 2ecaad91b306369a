"""Write tests/data/golden.0.et: a small trace with every node type, every attribute kind and
deps of both kinds.

Deliberately independent of chakra_core's writer: it builds the messages with the generated
protobuf classes and frames them with protobuf's own varint encoder, so the test that our writer
reproduces these bytes compares two independent encoders.  Run: python tests/data/make_golden.py
"""

import pathlib

from google.protobuf.internal.encoder import _VarintBytes

from chakra_core.io._proto import et_def_pb2 as pb

OUT = pathlib.Path(__file__).with_name("golden.0.et")

# one attribute per oneof slot: (slot, value)
ALL_KINDS = [
    ("double_val", 2.5), ("double_list", [1.5, -2.25]),
    ("float_val", 0.5), ("float_list", [0.25, 4.0]),
    ("int32_val", -7), ("int32_list", [1, -2, 3]),
    ("int64_val", -(1 << 40)), ("int64_list", [1 << 40, -5]),
    ("uint32_val", 4000000000), ("uint32_list", [0, 4000000000]),
    ("uint64_val", 1 << 63), ("uint64_list", [1, 1 << 63]),
    ("sint32_val", -123), ("sint32_list", [-1, 1]),
    ("sint64_val", -(1 << 50)), ("sint64_list", [-(1 << 50), 7]),
    ("fixed32_val", 77), ("fixed32_list", [1, 2]),
    ("fixed64_val", 1 << 60), ("fixed64_list", [3, 1 << 60]),
    ("sfixed32_val", -77), ("sfixed32_list", [-1, -2]),
    ("sfixed64_val", -(1 << 60)), ("sfixed64_list", [-3, 3]),
    ("bool_val", True), ("bool_list", [True, False, True]),
    ("string_val", "héllo"), ("string_list", ["a", "", "ü"]),
    ("bytes_val", b"\x00\xffraw"), ("bytes_list", [b"x", b"\x00"]),
]


def attr(name, slot, value):
    """One AttributeProto with ``value`` in ``slot``."""
    a = pb.AttributeProto(name=name)
    if slot.endswith("_list"):
        getattr(a, slot).values.extend(value)
    else:
        setattr(a, slot, value)
    return a


def nodes():
    """The golden nodes: one per node type, conventional attributes, every attribute kind."""
    out = []
    meta_node = pb.Node(id=1, name="## process_group:init ##", type=pb.METADATA_NODE)
    meta_node.inputs.values = "['[{\"pg_name\": \"0\", \"ranks\": [0, 1]}]']"
    out.append(meta_node)
    comp = pb.Node(id=2, name="aten::mm", type=pb.COMP_NODE, duration_micros=15, start_time_micros=100)
    comp.ctrl_deps.append(1)
    comp.inputs.values, comp.inputs.shapes, comp.inputs.types = "[[5, 6, 0, 1, 4, 'cpu']]", "[[2, 3]]", "['Tensor(float)']"
    comp.outputs.values, comp.outputs.shapes, comp.outputs.types = "[[7, 8, 0, 1, 4, 'cpu']]", "[[2, 2]]", "['Tensor(float)']"
    comp.attr.extend([attr("is_cpu_op", "bool_val", False), attr("num_ops", "int64_val", 24),
                      attr("tensor_size", "uint64_val", 40), attr("op_schema", "string_val", "aten::mm(Tensor self, Tensor mat2) -> Tensor"),
                      attr("rf_id", "int64_val", 11), attr("tid", "int64_val", 1)])
    out.append(comp)
    load = pb.Node(id=3, name="load", type=pb.MEM_LOAD_NODE, duration_micros=2)
    load.data_deps.append(2)
    load.attr.extend([attr("tensor_size", "uint64_val", 4096)])
    out.append(load)
    store = pb.Node(id=4, name="store", type=pb.MEM_STORE_NODE, duration_micros=3)
    store.data_deps.append(3)
    store.ctrl_deps.append(2)
    store.attr.extend([attr("tensor_size", "uint64_val", 4096)])
    out.append(store)
    send = pb.Node(id=5, name="send", type=pb.COMM_SEND_NODE)
    send.data_deps.append(4)
    send.attr.extend([attr("is_cpu_op", "bool_val", False), attr("comm_src", "int32_val", 0),
                      attr("comm_dst", "int32_val", 1), attr("comm_tag", "int32_val", 3),
                      attr("comm_size", "int64_val", 1024)])
    out.append(send)
    recv = pb.Node(id=6, name="recv", type=pb.COMM_RECV_NODE)
    recv.ctrl_deps.append(5)
    recv.attr.extend([attr("is_cpu_op", "bool_val", False), attr("comm_src", "int32_val", 1),
                      attr("comm_dst", "int32_val", 0), attr("comm_tag", "int32_val", 4),
                      attr("comm_size", "int64_val", 1024)])
    out.append(recv)
    coll = pb.Node(id=7, name="all_reduce", type=pb.COMM_COLL_NODE, duration_micros=9)
    coll.data_deps.extend([2, 6])
    coll.attr.extend([attr("is_cpu_op", "bool_val", False), attr("comm_type", "int64_val", pb.ALL_REDUCE),
                      attr("comm_size", "int64_val", 1 << 20), attr("pg_name", "string_val", "0"),
                      attr("comm_priority", "int32_val", 0), attr("involved_dim", "bool_list", [True, False])])
    out.append(coll)
    kinds = pb.Node(id=8, name="every_attribute_kind", type=pb.COMP_NODE, duration_micros=1)
    kinds.ctrl_deps.append(7)
    kinds.attr.extend(attr(f"k_{slot}", slot, value) for slot, value in ALL_KINDS)
    out.append(kinds)
    invalid = pb.Node(id=9, name="invalid", type=pb.INVALID_NODE)
    out.append(invalid)
    return out


def metadata():
    """The golden GlobalMetadata."""
    m = pb.GlobalMetadata(version="0.0.4")
    m.attr.extend([attr("schema", "string_val", "1.1.1-chakra.0.0.4"), attr("pid", "uint64_val", 1234)])
    return m


def main():
    """Write the file."""
    with open(OUT, "wb") as f:
        for msg in [metadata(), *nodes()]:
            data = msg.SerializeToString()
            f.write(_VarintBytes(len(data)) + data)
    print(OUT, OUT.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
