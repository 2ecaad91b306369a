"""Layer 1, I/O: the Chakra wire format (protobuf bindings, framing, the compiled walk over
node messages), ``.et`` reading and writing, the JSON forms and atomic publishing of outputs.
Imports only :mod:`chakra_core.base`. Private: public names through :mod:`chakra_core`."""
