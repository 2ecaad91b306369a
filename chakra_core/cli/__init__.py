"""The ``chakra`` command line: thin layers over the Python API."""
