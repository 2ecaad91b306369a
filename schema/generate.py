"""Regenerate chakra_core/io/_proto from the .proto files in this folder.

Run with the protoc of grpcio-tools 1.66.x (protoc 27.2, Python gencode 5.27.2), the oldest
gencode that the declared runtime range ``protobuf>=5.27.2,<8`` accepts:

    pip install grpcio-tools==1.66.2 && python schema/generate.py
"""

import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE.parent / "chakra_core" / "io" / "_proto"


def main() -> int:
    """Run protoc (gencode and its type stubs) and make the generated imports package-relative."""
    protos = ["et_def.proto", "et_batch.proto"]
    cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{HERE}", f"--python_out={OUT}", f"--pyi_out={OUT}"]
    subprocess.run(cmd + [str(HERE / p) for p in protos], check=True)
    for path in [*OUT.glob("*_pb2.py"), *OUT.glob("*_pb2.pyi")]:
        text = path.read_text()
        text = re.sub(r"^import (\w+_pb2) as", r"from . import \1 as", text, flags=re.M)
        if path.suffix == ".pyi":
            text = _int_enum_fields(text)
        path.write_text(text)
    return 0


def _int_enum_fields(stub: str) -> str:
    """Type enum-valued fields as ``int`` in a stub.

    Code passes the core's IntEnums (``chakra_core.NodeType``) or plain integers to these
    fields, and the protobuf runtime accepts any integer; protoc's stubs would accept only the
    gencode's own enum type.
    """
    for enum in re.findall(r"^class (\w+)\(int, metaclass=_enum_type_wrapper\.EnumTypeWrapper\)", stub, flags=re.M):
        stub = re.sub(rf"^(    \w+): {enum}$", r"\1: int", stub, flags=re.M)
        stub = stub.replace(f"_Union[{enum}, str]", "_Union[int, str]")
    return stub


if __name__ == "__main__":
    raise SystemExit(main())
