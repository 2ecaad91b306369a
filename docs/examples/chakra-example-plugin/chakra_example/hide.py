"""``hide_names``: replace node names by short salted hashes, keeping the structure."""

import hashlib

from chakra_core import Option, Transform


class HideNames(Transform):
    """Hide operator names (e.g. before sharing a trace outside the company)."""

    options = {"salt": Option("str", "", "secret mixed into the hashes")}

    def apply(self, traces, options):
        """Return the set with every node name hashed."""
        salt = options["salt"].encode()

        def rename(rank, node):
            digest = hashlib.sha256(salt + node.name.encode()).hexdigest()[:12]
            node.name = f"op_{digest}"
            node.inputs.Clear()
            node.outputs.Clear()
            return node

        return traces.map_nodes(rename)
