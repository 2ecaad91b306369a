"""The core's own formats, backends and transforms: default plugins using the public hooks."""
