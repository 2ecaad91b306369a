"""Regenerate chakra_core/_proto from the .proto files in this folder.

Run with the protoc of grpcio-tools 1.66.x (protoc 27.2, Python gencode 5.27.2), the oldest
gencode that the declared runtime range ``protobuf>=5.27.2,<8`` accepts:

    pip install grpcio-tools==1.66.2 && python schema/generate.py
"""

import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE.parent / "chakra_core" / "_proto"


def main() -> int:
    """Run protoc and make the generated imports package-relative."""
    protos = ["et_def.proto", "et_batch.proto"]
    cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{HERE}", f"--python_out={OUT}"]
    subprocess.run(cmd + [str(HERE / p) for p in protos], check=True)
    for path in OUT.glob("*_pb2.py"):
        text = path.read_text()
        text = re.sub(r"^import (\w+_pb2) as", r"from . import \1 as", text, flags=re.M)
        path.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
